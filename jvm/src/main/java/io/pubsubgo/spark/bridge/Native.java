package io.pubsubgo.spark.bridge;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The JNI entry points of libpubsubgo (go/capi/jni*.go). Every argument is
 * a long or an int: pointers are off-heap addresses ({@link OffHeap}), so
 * the library needs no jni.h and never calls back into the JVM. Each call
 * returns 0 or a gRPC status code, with the typed reason in the PgError at
 * {@code err} ({@link NativeException#check}).
 *
 * <p>The library is loaded once per JVM, on first use: from the path in
 * the system property {@code pubsubgo.library} or the environment variable
 * {@code PUBSUB_GO_LIBRARY}, else from the copy inside this jar
 * ({@code /io/pubsubgo/native/linux-<arch>/libpubsubgo.so}). One Go runtime
 * lives in a process, so a JVM must not also load it through another path.
 */
public final class Native {
  private Native() {}

  private static volatile boolean loaded;

  /** Loads the library if this JVM has not yet; safe from any thread. */
  public static void load() {
    if (loaded) {
      return;
    }
    synchronized (Native.class) {
      if (loaded) {
        return;
      }
      System.load(libraryPath());
      loaded = true;
    }
  }

  static String libraryPath() {
    String p = System.getProperty("pubsubgo.library");
    if (p == null || p.isEmpty()) {
      p = System.getenv("PUBSUB_GO_LIBRARY");
    }
    if (p != null && !p.isEmpty()) {
      if (!new File(p).isFile()) {
        throw new IllegalStateException("pubsub-go: the library at " + p
            + " (pubsubgo.library / PUBSUB_GO_LIBRARY) does not exist; expected the path of libpubsubgo.so");
      }
      return p;
    }
    String arch = System.getProperty("os.arch");
    String dir = "amd64".equals(arch) || "x86_64".equals(arch) ? "linux-x86_64"
        : "aarch64".equals(arch) || "arm64".equals(arch) ? "linux-aarch64" : null;
    String os = System.getProperty("os.name");
    if (dir == null || !"Linux".equals(os)) {
      throw new IllegalStateException("pubsub-go runs on Linux x86_64 and aarch64; this JVM is " + os + " " + arch);
    }
    String resource = "/io/pubsubgo/native/" + dir + "/libpubsubgo.so";
    try (InputStream in = Native.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("pubsub-go: this jar has no " + resource
            + "; set pubsubgo.library or PUBSUB_GO_LIBRARY to a libpubsubgo.so");
      }
      Path tmp = Files.createTempFile("libpubsubgo-", ".so");
      tmp.toFile().deleteOnExit();
      Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
      return tmp.toString();
    } catch (IOException e) {
      throw new IllegalStateException("pubsub-go: cannot extract " + resource + ": " + e, e);
    }
  }

  // Library --------------------------------------------------------------
  static native int version(long jsonOut, long err);

  static native void free(long p);

  static native void errorRelease(long err);

  static native void releaseArray(long array);

  static native void releaseSchema(long schema);

  static native int admin(long request, long jsonOut, long err);

  // Subscriber -----------------------------------------------------------
  static native int subscriberOpen(long config, long handleOut, long err);

  static native int subscriberTake(long handle, long maxRows, long waitMs, long batch, long schema,
      long acksOut, long acksLenOut, long logOut, long logLenOut, long waitedOut, long err);

  /** op: 0 ack, 1 nack, 2 modack (to deadline seconds), 3 release. */
  static native int subscriberAckIds(long handle, int op, long data, long len, int deadline, long err);

  static native int subscriberStats(long handle, long out, long err);

  static native int subscriberPause(long handle, int paused, long err);

  static native int subscriberClose(long handle, long err);

  static native int rawSchema(long schema, long err);

  static native int ipcImport(long data, long len, long batch, long schema, long err);

  /** The IPC stream of the nRows rows (ascending int32 indexes at rows) of the one-batch stream at data. */
  static native int ipcSelect(long data, long len, long rows, long nRows, long logOut, long logLenOut, long err);

  // idAttribute's id files (IdFiles) ---------------------------------------
  static native int idsToArrow(long data, long len, long out, long outLen, long err);

  static native int idsFromArrow(long data, long len, long out, long outLen, long err);

  // Publisher ------------------------------------------------------------
  static native int publisherOpen(long config, long handleOut, long err);

  static native int publisherPublishColumns(long handle, long desc, long err);

  static native int publisherStartIds(long handle, long prefix, long err);

  static native int publisherFlush(long handle, long timeoutMs, long jsonOut, long err);

  static native int publisherClose(long handle, long err);

  // Embedded emulator ----------------------------------------------------
  static native int emulatorStart(long hostPort, long handleOut, long addrOut, long err);

  static native int emulatorStop(long handle, long err);

  // Test hook: exported only by a library built with -tags pubsubgo_debug.
  static native int debugPanic(long err);
}
