/*
 * weights.h — weight files: safetensors and .npy (v1/v2/v3) read through
 * mmap and written atomically; a naive text format for comparison.
 *
 * A flow_weights is an opened file: a read-only mapping plus a table of
 * tensors whose data pointers point into it (zero copy). Validation is
 * strict and every rejection is one line naming the file and the field or
 * byte offset, in the caller's err buffer. Each open is one weight_load
 * phase in the recording.
 *
 * Private to the runtime; the Restore/Save ops and the layer API call it.
 */
#ifndef FLOW_WEIGHTS_H
#define FLOW_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#define FLOW_WEIGHTS_MAX_RANK 8
/* safetensors' MAX_HEADER_SIZE and numpy's default max_header_size. */
#define FLOW_SAFETENSORS_MAX_HEADER 100000000ull
#define FLOW_NPY_MAX_HEADER 10000u

/* Element types found in weight files. The first five are flow's tensor
 * dtypes; the rest load as raw bytes (flow_weights_to_f32 converts). */
typedef enum flow_wdtype {
	FLOW_WD_F32 = 0,
	FLOW_WD_F64,
	FLOW_WD_I32,
	FLOW_WD_I64,
	FLOW_WD_BOOL,
	FLOW_WD_F16,
	FLOW_WD_BF16,
	FLOW_WD_I8,
	FLOW_WD_U8,
	FLOW_WD_I16,
	FLOW_WD_COUNT
} flow_wdtype;

size_t flow_wdtype_size(flow_wdtype t);
const char *flow_wdtype_safetensors_name(flow_wdtype t); /* "F32" */
const char *flow_wdtype_npy_descr(flow_wdtype t);        /* "<f4" */

typedef struct flow_weight {
	const char *name;
	flow_wdtype dtype;
	int rank;
	int64_t shape[FLOW_WEIGHTS_MAX_RANK];
	const void *data;   /* into the mapping (or a heap buffer for text) */
	size_t nbytes;
} flow_weight;

typedef struct flow_weights flow_weights;

typedef enum flow_weights_format {
	FLOW_WF_SAFETENSORS = 0,
	FLOW_WF_NPY,
	FLOW_WF_TEXT,
} flow_weights_format;

/* Opens by format. NULL on error with a one-line message in err. */
flow_weights *flow_weights_open(const char *path, flow_weights_format fmt,
				char *err, size_t errlen);
/* Picks the format from the extension (.safetensors, .npy, else text). */
flow_weights *flow_weights_open_any(const char *path, char *err, size_t errlen);
void flow_weights_close(flow_weights *w);

int flow_weights_count(const flow_weights *w);
const flow_weight *flow_weights_at(const flow_weights *w, int i);
const flow_weight *flow_weights_find(const flow_weights *w, const char *name);
/* safetensors __metadata__ value, or NULL. */
const char *flow_weights_metadata(const flow_weights *w, const char *key);
/* Bytes read from the file (mapping size, or text bytes consumed). */
size_t flow_weights_file_bytes(const flow_weights *w);

/* Parse an in-memory image (the fuzz targets and the readers share this).
 * `label` names the source in messages. The result borrows buf: keep it
 * alive until flow_weights_close. */
flow_weights *flow_safetensors_parse(const void *buf, size_t len, const char *label,
				     char *err, size_t errlen);
flow_weights *flow_npy_parse(const void *buf, size_t len, const char *label,
			     char *err, size_t errlen);

/* Converts any element type to f32 (n = nbytes / size). */
void flow_weights_to_f32(const flow_weight *t, float *out);

/* Writers: atomic (temp file in the same directory, fsync, rename). The
 * safetensors header is space-padded so data starts 8-byte aligned; npy
 * writes v1.0 (v2.0 when the header needs it), 64-byte aligned. */
int flow_safetensors_write(const char *path, const flow_weight *ts, int n,
			   const char *const *meta_kv, int n_meta,
			   char *err, size_t errlen);
int flow_npy_write(const char *path, const flow_weight *t, char *err, size_t errlen);
/* The naive text format: "flowtxt 1" line, then per tensor a line
 * "tensor <name> <dtype> <rank> <dims...>" and one decimal per line. */
int flow_text_weights_write(const char *path, const flow_weight *ts, int n,
			    char *err, size_t errlen);

#endif /* FLOW_WEIGHTS_H */
