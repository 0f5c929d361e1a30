package io.pubsubgo.spark.bridge;

import java.nio.charset.StandardCharsets;
import org.apache.spark.unsafe.Platform;

/**
 * A failed library call: the gRPC status code and the machine-readable
 * kind of its PgError (pubsubgo.h; the kinds are the contract's
 * {@code error_kinds}: "not_found", "panic", "decoder_time_limit", ...).
 * Branch on {@link #code()} or {@link #kind()}, never on the message.
 */
public class NativeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** sizeof(struct PgError): int32 code, char kind[32], char* message. */
  static final long PG_ERROR_SIZE = 48;

  private final int code;
  private final String kind;

  public NativeException(int code, String kind, String message) {
    super(message);
    this.code = code;
    this.kind = kind;
  }

  public int code() {
    return code;
  }

  public String kind() {
    return kind;
  }

  /** A Go panic inside the library, recovered there (the process lives on). */
  public boolean isPanic() {
    return "panic".equals(kind);
  }

  /** Throws the error at err when rc != 0, releasing it either way. */
  static void check(int rc, long err, String what) {
    if (rc == 0) {
      return;
    }
    int code = Platform.getInt(null, err);
    byte[] k = new byte[32];
    Platform.copyMemory(null, err + 4, k, Platform.BYTE_ARRAY_OFFSET, 32);
    int n = 0;
    while (n < k.length && k[n] != 0) {
      n++;
    }
    String kind = new String(k, 0, n, StandardCharsets.UTF_8);
    String msg = OffHeap.string(Platform.getLong(null, err + 40));
    Native.errorRelease(err);
    if (msg.isEmpty()) {
      msg = "status " + rc;
    }
    throw new NativeException(code == 0 ? rc : code, kind, "pubsub-go: " + what + ": " + msg);
  }
}
