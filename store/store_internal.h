/* store_internal.h — private to the store's files. */
#ifndef PP_STORE_INTERNAL_H
#define PP_STORE_INTERNAL_H

#include "store.h"

#include <pthread.h>
#include <sqlite3.h>

#include "pp_hash.h"

typedef struct intern_ent {
	char *text;
	size_t len;
	int64_t id;
} intern_ent;

struct pp_store {
	sqlite3 *db;
	char path[4096];
	int mode;
	int schema_version;
	int fresh;                   /* created by this open: written without syncs */
	int schema_current;          /* its meta schema_digest is this build's */
	unsigned indexed, pending_index; /* bits of store.c's indexes[] the file has / is making */
	int indexed_known;           /* indexed was read from the file */
	int has_span_groups;         /* 0 in files older than span folding */
	/* string -> id cache over the strings table (write mode) */
	intern_ent *interned;
	uint32_t n_interned, cap_interned;
	pp_hash intern_index;
	pp_hash intern_by_id;        /* the same entries by id: names read back after an ingest */
	sqlite3_stmt *ins_string, *sel_string;
	pthread_t sync_ahead;        /* pp_store_sync_ahead's thread, joined at close */
	int sync_ahead_running;
	/* the bound on each statement on a file from outside (store_progress) */
	const _Atomic int *cancel;   /* pp_store_open_cancellable's flag, while the open checks */
	int64_t limit_ns;            /* 0: none */
	int64_t deadline_ns;         /* CLOCK_MONOTONIC; 0: none set */
	int timed_out;               /* a statement ran past limit_ns and was stopped */
	char timeout_msg[128];
};

void pp_store_register_functions(sqlite3 *db);

/* The bytes of the empty database create_schema makes, checkpointed and in
 * WAL mode, generated at build time by store_image_gen (store_image_data.c);
 * length 0 in the generator itself, which makes it through the SQL. */
extern const unsigned char pp_store_image[];
extern const size_t pp_store_image_len;
/* Puts the image at path, whole under its name or not at all (written
 * beside it, then linked): 0 made, 1 path exists already, -1 not made
 * (no image, or it could not be written: the caller goes the SQL way,
 * which reports any real error). store_image.c */
int store_image_place(const char *path);

/* The connection and raw SQL, for the store's own files and white-box tests
 * only: everything else reads through the typed functions of store.h. */
sqlite3 *pp_store_db(pp_store *st);
typedef int (*pp_row_cb)(sqlite3_stmt *row, void *ud);
int pp_store_query(pp_store *st, const char *sql, int64_t run_id, pp_row_cb cb, void *ud);

/* Runs sql (statements without results); 0, or -1 with "path: message"
 * in err. */
int store_exec(pp_store *st, const char *sql, char *err, size_t errlen);
/* 1 when schema ("main", or an attached one) has the table */
int store_has_table(pp_store *st, const char *schema, const char *table);
/* Refuses a schema (main, or an attached one) holding a trigger, a view
 * other than the schema's own, or a virtual table: 0, or -1 with err
 * naming the object. */
int store_check_schema(pp_store *st, const char *schema, const char *path, char *err, size_t errlen);
/* Prepares sql, binds ?1 = a, ?2 = b and ?3 = t (those the statement has),
 * calls row per result row (non-zero stops) and finalizes. 0, or -1 on any
 * SQLite error. */
int store_each(pp_store *st, const char *sql, int64_t a, int64_t b, const char *t,
	       int (*row)(sqlite3_stmt *s, void *ud), void *ud);
/* store_each collecting the rows into a malloc'd array of elements of
 * `size` bytes, each zeroed and filled by read(row, elem). 0 with *out
 * (free it) and *n, or -1 with *out NULL and *n 0. */
int store_rows(pp_store *st, const char *sql, int64_t a, int64_t b, const char *t, size_t size,
	       void (*read)(sqlite3_stmt *s, void *elem), void *out, int *n);
/* Column text or NULL / or "" */
static inline const char *store_text(sqlite3_stmt *s, int col)
{
	return (const char *)sqlite3_column_text(s, col);
}
static inline int64_t store_i64_or(sqlite3_stmt *s, int col, int64_t dflt)
{
	return sqlite3_column_type(s, col) == SQLITE_NULL ? dflt : sqlite3_column_int64(s, col);
}
void pp_store_intern_cache_free(pp_store *st);
/* The id of len bytes at s in `strings` (added if new); -1 on a db error. */
int64_t pp_store_intern_n(pp_store *st, const char *s, size_t len);
/* The text of a string this connection interned (NULL if not cached):
 * readers after an ingest skip a query per name. */
const char *pp_store_intern_text(pp_store *st, int64_t id);

#endif
