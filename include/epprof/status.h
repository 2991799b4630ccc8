/* epprof/status.h: status objects returned by every epprof function.
 *
 * Every fallible epprof function returns `epprof_status*`. NULL means
 * success. A non-NULL status is owned by the caller and must be released
 * with epprof_status_release(). Statuses are immutable and may be read from
 * any thread.
 */
#ifndef EPPROF_STATUS_H
#define EPPROF_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define EPPROF_API __declspec(dllexport)
#elif defined(__GNUC__)
#define EPPROF_API __attribute__((visibility("default")))
#else
#define EPPROF_API
#endif

/* Status codes. Append-only: values are part of the ABI. */
typedef enum epprof_status_code {
  EPPROF_OK = 0,                   /* never carried by a status object */
  EPPROF_INVALID_ARGUMENT = 1,     /* an argument is null, out of range or malformed */
  EPPROF_NOT_FOUND = 2,            /* unknown or stale handle, missing symbol or file */
  EPPROF_FAILED_PRECONDITION = 3,  /* the object is in the wrong state for the call */
  EPPROF_VERSION_MISMATCH = 4,     /* a plugin was built for an ABI this host does not speak */
  EPPROF_IO_ERROR = 5,             /* a file could not be opened, written or renamed */
  EPPROF_OUT_OF_MEMORY = 6,        /* an allocation failed */
  EPPROF_RESOURCE_EXHAUSTED = 7,   /* a fixed limit (handles, nesting depth) was reached */
  EPPROF_PLUGIN_ERROR = 8,         /* a plugin slot failed; the message says which */
  EPPROF_UNSUPPORTED = 9,          /* the feature is not available on this machine */
  EPPROF_INTERNAL = 10,            /* a bug in epprof; please report it */
  EPPROF_MULTIPASS = 11            /* done, but a counter set needs more than one pass on its
                                      device (epprof/counters.h); the message gives the count */
} epprof_status_code;

typedef struct epprof_status epprof_status;

/* Creates a status with `code` and a copy of `message` (may be NULL).
 * Returns NULL when `code` is EPPROF_OK. Ownership passes to the caller.
 * Thread-safe. Plugins create statuses through epprof_host_api instead. */
EPPROF_API epprof_status* epprof_status_create(epprof_status_code code, const char* message);

/* The code of `status`; EPPROF_OK for NULL. Thread-safe. */
EPPROF_API epprof_status_code epprof_status_get_code(const epprof_status* status);

/* The message of `status`: never NULL ("" for NULL or no message). Borrowed;
 * valid until the status is released. Thread-safe. */
EPPROF_API const char* epprof_status_get_message(const epprof_status* status);

/* Releases `status`. NULL is a no-op. */
EPPROF_API void epprof_status_release(epprof_status* status);

/* The name of a status code ("INVALID_ARGUMENT", ...), or "UNKNOWN" for a
 * value not in the enum. Static storage. */
EPPROF_API const char* epprof_status_code_name(epprof_status_code code);

#ifdef __cplusplus
}
#endif

#endif /* EPPROF_STATUS_H */
