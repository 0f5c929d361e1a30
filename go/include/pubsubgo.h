/*
 * pubsubgo.h: the C API of libpubsubgo, the pubsub-go native data plane.
 *
 * One shared library holds every native part (subscriber, publisher,
 * admin helpers, embedded emulator, WASM decoders) because only one Go
 * runtime can live in a process.
 *
 * Conventions
 *  - Every function returns an int status: 0 on success, otherwise a gRPC
 *    status code (3 INVALID_ARGUMENT, 4 DEADLINE_EXCEEDED, 5 NOT_FOUND,
 *    7 PERMISSION_DENIED, 8 RESOURCE_EXHAUSTED, 9 FAILED_PRECONDITION,
 *    13 INTERNAL, 14 UNAVAILABLE, 16 UNAUTHENTICATED, ...). On failure the
 *    struct PgError *err (zero it before the call) receives the typed
 *    reason: the same code, a machine-readable kind and a message; release
 *    it with pg_error_release. Pass err = NULL to ignore the reason.
 *  - A Go panic inside any call is recovered and returned as 13 INTERNAL,
 *    kind "panic", with the panic text; it never takes the process down.
 *  - Handles are opaque non-zero integers. Using a closed handle returns
 *    9 FAILED_PRECONDITION, kind "closed".
 *  - Configs are JSON objects; unknown keys and wrong types are rejected
 *    with 3 INVALID_ARGUMENT naming the key. Keys are documented in
 *    docs/c-api.md.
 *  - Arrow data crosses in both directions through the Arrow C Data
 *    Interface. Exported buffers live in C memory (never the Go heap); the
 *    consumer calls each struct's release callback when done. Arrays passed
 *    in are moved: the library takes ownership and releases them.
 *  - Strings returned through char** are malloc'd; free with pg_free.
 *
 * This header is also parsed by cffi (ABI mode), so it contains no
 * preprocessor conditionals beyond the include guard.
 */
#ifndef PUBSUBGO_H
#define PUBSUBGO_H

#include <stdint.h>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif

/* Errors ----------------------------------------------------------------- */

/* The typed reason of a failed call (like arrow-adbc's AdbcError). Branch
 * on code or kind, never on the message text. */
struct PgError {
  /* The gRPC status code the call returned. */
  int32_t code;
  /* NUL-terminated, machine-readable: the code's canonical name in lower
   * case ("not_found", "unavailable", ...) or a kind that says more
   * ("closed", "panic", "decoder_time_limit", "decoder_memory_limit",
   * "decoder_crashed"). docs/c-api.md lists them. */
  char kind[32];
  /* NUL-terminated, malloc'd: "CODE_NAME: what failed: detail". Freed by
   * pg_error_release. */
  char* message;
};

/* Frees err->message and zeroes *err. NULL is a no-op. */
void pg_error_release(struct PgError* err);

/* Library ---------------------------------------------------------------- */

/* Frees a string returned by this library. NULL is a no-op. */
void pg_free(char* p);

/* Library version, ABI version and Go version as JSON. */
int pg_version(char** json_out, struct PgError* err);

/* Build information -------------------------------------------------------- */

/* What the library was built from, as JSON: {"version", "abi", "go", "os",
 * "arch", "modules": {"arrow_go", "wazero", "pubsub", "grpc", "protobuf"},
 * "build_CGO_ENABLED", "build_-trimpath"}. Versions come from the build
 * information the Go linker embeds. See docs/c-api.md. */
int pg_version_info(char** json_out, struct PgError* err);

/* Subscriber ------------------------------------------------------------- */

/* Opens a subscriber: starts StreamingPull streams, flow control and
 * lease extension. Fails with 5 NOT_FOUND for an unknown subscription and
 * 14 UNAVAILABLE for an unreachable endpoint (after bounded retries). */
int pg_subscriber_open(char* config_json, uint64_t* handle_out, struct PgError* err);

/* Waits up to wait_ms for up to max_rows messages (<= 0: the configured
 * defaults; fewer may come back early at the end of a batch built for
 * another size, see docs/c-api.md) and exports them as one record batch in the raw schema
 * (message_id, publish_time, attributes, payload, ordering_key,
 * delivery_attempt), or the decoded schema when a decoder is configured.
 * The ack ids of the same rows, in the same order, come back as a separate
 * utf8 array (out_ack_ids/out_ack_schema). A batch may have zero rows.
 * Every message handed out stays leased (its deadline extended) until it
 * is acked, nacked or released. The batch was built in C memory as the
 * messages arrived, so this call only hands it over. out_schema and
 * out_ack_schema may be NULL: the schema is the same on every call of a
 * subscriber, so a caller can import it once and skip it afterwards.
 * out_waited_out (may be NULL) is set to 1 when the batch is short because
 * wait_ms ran out with nothing more buffered, 0 otherwise (a full batch,
 * or a short one at the end of a batch built for another size). */
int pg_subscriber_next(uint64_t handle, int64_t max_rows, int64_t wait_ms,
                       struct ArrowArray* out_batch, struct ArrowSchema* out_schema,
                       struct ArrowArray* out_ack_ids, struct ArrowSchema* out_ack_schema,
                       int32_t* out_waited_out, struct PgError* err);

/* Ack / nack (deadline 0) / modify the deadline of the given ack ids (a
 * utf8 or large_utf8 array, moved into the call). These work for any ack
 * id of the subscription, also ones pulled by another process. */
int pg_subscriber_ack(uint64_t handle, struct ArrowArray* ack_ids, struct ArrowSchema* schema, struct PgError* err);
int pg_subscriber_nack(uint64_t handle, struct ArrowArray* ack_ids, struct ArrowSchema* schema, struct PgError* err);
int pg_subscriber_modack(uint64_t handle, struct ArrowArray* ack_ids, struct ArrowSchema* schema,
                         int32_t deadline_seconds, struct PgError* err);

/* Stops extending the leases of the given handed-out ack ids without
 * acking or nacking them: they keep their last deadline (used to hand the
 * lease over to another process, e.g. the Spark driver). */
int pg_subscriber_release(uint64_t handle, struct ArrowArray* ack_ids, struct ArrowSchema* schema, struct PgError* err);

/* pg_subscriber_ack, reporting what happened to the ids as JSON:
 * {"done": n, "rejected": {"<reason>": count, ...}}. On a subscription with
 * exactly-once delivery the service may refuse ack ids for good (e.g.
 * PERMANENT_FAILURE_INVALID_ACK_ID: the lease expired); those were not
 * acked and come back. Transient per-id failures are retried first; an
 * error means some ids may still succeed when retried. */
int pg_subscriber_ack_results(uint64_t handle, struct ArrowArray* ack_ids, struct ArrowSchema* schema,
                              char** json_out, struct PgError* err);

/* A subscriber's counters, field for field go/internal/subscriber.Stats
 * (capi's TestStatsStructMatchesGo checks it): totals since open, except
 * held, buffered, quiet_ms, blocked_ms and streams, which are current values. New
 * fields go at the end, with a new ABI version: the caller allocates the
 * struct and the library fills all of it.
 * A subscriber unable to receive (flow control full, or a stream out of a
 * live session: connecting, backing off, reopening) would otherwise look
 * like an empty subscription; flow_full_ms, streams_down_ms and blocked_ms
 * say how long it could not. The totals stop when close begins. */
struct PgSubscriberStats {
  int64_t pulled;            /* messages received */
  int64_t handed_out;        /* messages returned by pg_subscriber_next */
  int64_t held;              /* received, not yet acked/nacked/released/expired */
  int64_t acked;             /* ack ids acknowledged */
  int64_t nacked;            /* ack ids nacked, by the caller or by close */
  int64_t extended;          /* lease extensions sent (one per ack id) */
  int64_t redeliveries;      /* messages received more than once */
  int64_t decode_errors;     /* rows a decoder could not decode */
  int64_t bytes_pulled;      /* message bytes received */
  int64_t streams_restarted; /* stream reconnects after an error, or after a pause too long for what was in flight */
  int64_t nacked_on_close;   /* of nacked: buffered messages close gave back */
  int64_t buffered;          /* received, not yet handed out */
  int64_t quiet_ms;          /* every stream live, flow control open, nothing arriving, this long */
  int64_t ack_rejected;      /* exactly-once delivery: ack ids refused for good */
  int64_t modack_rejected;   /* the same for modacks and nacks */
  int64_t flow_full_ms;      /* flow control full (streams stop reading), in total */
  int64_t streams_down_ms;   /* at least one stream not in a live session, in total */
  int64_t blocked_ms;        /* unable to receive (either of the two) without a break, until now; 0 if able */
  int64_t late;              /* of pulled: published after arrival_cutoff_us, released on arrival, never handed out */
  int64_t streams;           /* StreamingPull streams running: streams, or up to catch_up_streams once catching up */
};

/* Fills *out with the subscriber's counters. */
int pg_subscriber_stats(uint64_t handle, struct PgSubscriberStats* out, struct PgError* err);

/* paused != 0: half-closes the subscriber's streams and opens none until
 * called again with 0; it keeps what it holds, leases extended, and only
 * stops receiving (a subscriber kept unused between tasks has then no
 * stream a SIGKILL could cut: go/internal/subscriber/pause.go). */
int pg_subscriber_pause(uint64_t handle, int paused, struct PgError* err);

/* Closes the subscriber: waits for pending acks to be sent, nacks every
 * message pulled but never handed out, and stops lease extension. */
int pg_subscriber_close(uint64_t handle, struct PgError* err);

/* Publisher -------------------------------------------------------------- */

int pg_publisher_open(char* config_json, uint64_t* handle_out, struct PgError* err);

/* Publishes every row of a record batch with a `payload` column (binary or
 * utf8) and optional `attributes` (map<utf8,utf8>) and `ordering_key`
 * (utf8). The batch is moved into the call. Blocks while the bytes in
 * flight exceed the configured bound (backpressure). Asynchronous publish
 * failures are reported by this call or the next flush. */
int pg_publisher_publish(uint64_t handle, struct ArrowArray* batch, struct ArrowSchema* schema, struct PgError* err);

/* Rows published from now on get the ids prefix-0, prefix-1, ... (needs
 * id_attribute): a publisher kept for several writes numbers each write's
 * rows from 0, as a fresh one would. */
int pg_publisher_start_ids(uint64_t handle, char* prefix, struct PgError* err);

/* Waits up to timeout_ms until the server acknowledged every message
 * published so far. Result JSON: {"published": n, "bytes": n, "retries": n}. */
int pg_publisher_flush(uint64_t handle, int64_t timeout_ms, char** json_out, struct PgError* err);

/* Closes the publisher; unflushed messages are abandoned (flush first). */
int pg_publisher_close(uint64_t handle, struct PgError* err);

/* Admin ------------------------------------------------------------------ */

/* Small admin helper: topics, subscriptions, snapshots and seek, a topic's
 * schema. request_json: {"op": ..., ...}; the ops and their fields are
 * listed in docs/c-api.md. */
int pg_admin(char* request_json, char** json_out, struct PgError* err);

/* Embedded emulator (go/internal/emulator, docs/emulator.md) ------------- */

/* Serves an in-process Pub/Sub emulator on host_port ("127.0.0.1:0" for a
 * free port); *addr_out receives the bound host:port. */
int pg_emulator_start(char* host_port, uint64_t* handle_out, char** addr_out, struct PgError* err);
int pg_emulator_stop(uint64_t handle, struct PgError* err);

/* Decoder ------------------------------------------------------------------ */

/* The payload decoders of schema mode on any batch of payloads
 * (docs/decode.md). config_json is the subscriber config's "decoder"
 * object: {"format": a built-in format (_contract.json's builtin_formats)} (runs natively)
 * or {"wasm": path} for a decoder module (runs in the sandbox), plus
 * "schema" (base64 Arrow IPC schema; the target), "options" (object of
 * strings, e.g. avro_schema), "memory_limit_mb", "timeout_ms". Errors:
 * INVALID_ARGUMENT (bad config, the decoder rejects the schema or
 * options), DEADLINE_EXCEEDED (time limit), RESOURCE_EXHAUSTED (memory
 * cap), ABORTED (the module crashed). A handle is safe for concurrent use. */
int pg_decoder_open(char* config_json, uint64_t* handle_out, struct PgError* err);

/* The decoded columns' schema (the target, or the one the decoder derived). */
int pg_decoder_schema(uint64_t handle, struct ArrowSchema* out_schema, struct PgError* err);

/* Decodes a binary, large_binary, utf8 or large_utf8 array of payloads
 * (moved into the call; null payloads decode as empty ones) into a record
 * batch (a struct array): the decoded columns, then `__decode_error`
 * (utf8, null where the row decoded, the message where it did not; the
 * row is then null in every decoded column). out_schema may be NULL: the
 * batch's schema is the same for every call on a handle, so a caller that
 * kept it from an earlier call need not have it exported again. */
int pg_decoder_decode(uint64_t handle, struct ArrowArray* payloads, struct ArrowSchema* payloads_schema,
                      struct ArrowArray* out_batch, struct ArrowSchema* out_schema, struct PgError* err);

int pg_decoder_close(uint64_t handle, struct PgError* err);

#endif /* PUBSUBGO_H */
