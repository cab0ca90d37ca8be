/* The store: opening, validating and closing phaseprof databases. */
#include "store.h"
#include "store_internal.h"

#include "pp_assert.h"
#include "pp_debug.h"
#include "pp_grow.h"
#include "pp_hash.h"
#include "phaseprof.h"
#include "pp_env.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern const char pp_schema_sql[];

/* How long a writer waits for another (SQLite's busy timeout). */
#define WRITE_BUSY_MS 120000

/* The indexes, each on its table, built once the table has min_rows rows
 * (pp_store_build_indexes). Tables read a few queries per run get theirs
 * only once a scan would cost more than keeping the index: a new file's
 * one run needs none. At 4096 rows, the previous bound, record's summary
 * scanned ~3,300 rows of libraries and allocations three times after each
 * append (3.3 M instructions, ~0.7 ms); an index costs ~3 k instructions
 * per row inserted. */
#define INDEX_MIN_ROWS 1024
static const struct { const char *table, *name, *cols; int min_rows; } indexes[] = {
	{"spans", "spans_run", "run_id, tid, start_ns", 1},
	{"spans", "spans_kind", "run_id, kind", 1},
	{"span_groups", "span_groups_run", "run_id, tid", 1},
	{"counters", "counters_run", "run_id, name_id, ts_ns", 1},
	{"marks", "marks_run", "run_id, ts_ns", 1},
	{"ops", "ops_run", "run_id, name_id", 1},
	{"graph_nodes", "graph_nodes_g", "graph_id", 1},
	{"graph_edges", "graph_edges_g", "graph_id", 1},
	{"samples", "samples_run", "run_id, stack", 1},
	{"gpu_activity", "gpu_run", "run_id, start_ns", 1},
	{"findings", "findings_run", "run_id", 1},
	{"comm", "comm_run", "run_id, start_ns", 1},
	{"run_meta", "run_meta_run", "run_id, key", 1},
	{"threads", "threads_run", "run_id", INDEX_MIN_ROWS},
	{"allocations", "allocations_run", "run_id", INDEX_MIN_ROWS},
	{"libraries", "libraries_run", "run_id", INDEX_MIN_ROWS},
	{"io", "io_run", "run_id", INDEX_MIN_ROWS},
	{"py_frames", "py_frames_run", "run_id, id", INDEX_MIN_ROWS},
	{"step_kept", "step_kept_run", "run_id, site_id, step", INDEX_MIN_ROWS},
};
#define N_INDEXES (sizeof indexes / sizeof indexes[0])

sqlite3 *pp_store_db(pp_store *st) { return st->db; }
const char *pp_store_path(pp_store *st) { return st->path; }

int pp_store_created(const pp_store *st)
{
	return st && st->mode == PP_STORE_WRITE && st->fresh;
}

int pp_store_is_file(pp_store *st, const char *path)
{
	struct stat a, b;
	return stat(st->path, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

int store_exec(pp_store *st, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;
	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", st->path, msg ? msg : sqlite3_errmsg(st->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int store_has_table(pp_store *st, const char *schema, const char *table)
{
	char sql[160];
	snprintf(sql, sizeof sql, "SELECT 1 FROM %s.sqlite_master WHERE type='table' AND name=?", schema);
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	int r = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return r;
}

static int64_t query_int(sqlite3 *db, const char *sql, int64_t dflt, int *rc_out)
{
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	int64_t v = dflt;
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			v = sqlite3_column_int64(s, 0);
			rc = SQLITE_OK;
		} else if (rc == SQLITE_DONE) {
			rc = SQLITE_OK;
		}
		sqlite3_finalize(s);
	}
	if (rc_out)
		*rc_out = rc;
	return v;
}

/* Whether a one-value query answers exactly want (0 on no row or error). */
static int query_text_eq(sqlite3 *db, const char *sql, const char *want)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return 0;
	int eq = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0) &&
		 strcmp((const char *)sqlite3_column_text(s, 0), want) == 0;
	sqlite3_finalize(s);
	return eq;
}

/* What this build's schema and phase kinds are, as text: a file whose
 * meta 'schema_digest' says the same needs neither re-run on an append
 * (CREATE ... IF NOT EXISTS over ~30 tables and the kinds' inserts: ~1.8 M
 * instructions for every record into an existing database). */
static uint32_t schema_digest(void)
{
	uint32_t h = pp_hash_mem(pp_schema_sql, strlen(pp_schema_sql));
	for (int k = 0; k < PP_KIND_COUNT; k++) {
		const char *n = pp_kind_name((pp_kind)k);
		h = h * 31u + pp_hash_mem(n, strlen(n));
	}
	return h;
}

static int write_digest(pp_store *st, char *err, size_t errlen)
{
	char sql[128];
	snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta(key,value) VALUES('schema_digest','%08x')",
		 schema_digest());
	return store_exec(st, sql, err, errlen);
}

/* Whether a view is one of the schema's own (spans_v, ops_v), word for
 * word as SQLite stores it: "CREATE VIEW name AS ..." from the schema's
 * "CREATE VIEW IF NOT EXISTS name AS ...;". */
static int own_view(const char *name, const char *sql)
{
	static const char mark[] = "CREATE VIEW IF NOT EXISTS ";
	if (!name || !sql || strncmp(sql, "CREATE VIEW ", 12) != 0)
		return 0;
	for (const char *p = pp_schema_sql; (p = strstr(p, mark)) != NULL;) {
		p += sizeof mark - 1;
		const char *end = strchr(p, ';');
		size_t nl = strlen(name);
		if (!end)
			return 0;
		if (strncmp(p, name, nl) == 0 && p[nl] == ' ')
			return strlen(sql + 12) == (size_t)(end - p) && strncmp(sql + 12, p, (size_t)(end - p)) == 0;
	}
	return 0;
}

/* A phaseprof database holds tables and indexes only (and the schema's
 * two views, checked word for word): a trigger, a view or
 * a virtual table in a file from outside is SQL its sender wrote, run by
 * whoever opens it (a trigger on runs fires at every record into it; a
 * view in place of a table runs in every read). The file is refused,
 * naming the object. 0 clean, -1 refused or unreadable (err set). */
int store_check_schema(pp_store *st, const char *schema, const char *path, char *err, size_t errlen)
{
	char sql[200];
	sqlite3_stmt *s = NULL;
	int rc;
	snprintf(sql, sizeof sql,
		 "SELECT type, name, sql FROM %s.sqlite_master WHERE type IN ('trigger','view') OR "
		 "(type = 'table' AND sql LIKE 'create virtual%%')",
		 schema);
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		goto fail;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(s, 0);
		const char *name = (const char *)sqlite3_column_text(s, 1);
		if (type && strcmp(type, "view") == 0 && own_view(name, (const char *)sqlite3_column_text(s, 2)))
			continue;
		int virt = type && strcmp(type, "table") == 0;
		snprintf(err, errlen,
			 "%s: holds %s '%.100s', which no phaseprof database has: refusing a file that carries "
			 "its own SQL",
			 path, virt ? "a virtual table" : type && strcmp(type, "view") == 0 ? "a view" : "a trigger",
			 name ? name : "?");
		sqlite3_finalize(s);
		return -1;
	}
	if (rc != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(s);
	return 0;
fail:
	snprintf(err, errlen, "%s: cannot read: %s", path, pp_store_error(st));
	sqlite3_finalize(s);
	return -1;
}

/* Is this an SQLite file at all, and is it ours? Names the problem. */
static int validate_snapshot(pp_store *st, int fresh, char *err, size_t errlen)
{
	int rc;
	int64_t app = query_int(st->db, "PRAGMA application_id", 0, &rc);
	if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT) {
		snprintf(err, errlen, "%s: not an SQLite database (%s)", st->path,
			 sqlite3_errstr(rc));
		return -1;
	}
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: cannot read: %s", st->path, pp_store_error(st));
		return -1;
	}
	int64_t ntables = query_int(st->db, "SELECT count(*) FROM sqlite_master", 0, &rc);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: cannot read: %s", st->path, pp_store_error(st));
		return -1;
	}
	if (ntables == 0 && fresh)
		return 1; /* empty: caller creates the schema */
	if (store_check_schema(st, "main", st->path, err, errlen) != 0)
		return -1;
	if (app != PP_APPLICATION_ID) {
		if (ntables == 0)
			snprintf(err, errlen, "%s: empty SQLite database, not a phaseprof recording",
				 st->path);
		else
			snprintf(err, errlen,
				 "%s: SQLite database of another program (application_id %lld, %lld "
				 "tables), not a phaseprof recording",
				 st->path, (long long)app, (long long)ntables);
		return -1;
	}
	int64_t ver = query_int(st->db,
				"SELECT CAST(value AS INTEGER) FROM meta WHERE key='schema_version'",
				-1, &rc);
	if (rc != SQLITE_OK || ver < 0) {
		snprintf(err, errlen, "%s: phaseprof database without a schema version (damaged?)",
			 st->path);
		return -1;
	}
	if (ver > PP_SCHEMA_VERSION) {
		snprintf(err, errlen,
			 "%s: written by a newer phaseprof (schema version %lld; this build reads up "
			 "to %d)",
			 st->path, (long long)ver, PP_SCHEMA_VERSION);
		return -1;
	}
	st->schema_version = (int)ver;
	char want[16];
	snprintf(want, sizeof want, "%08x", schema_digest());
	st->schema_current = query_text_eq(st->db, "SELECT value FROM meta WHERE key='schema_digest'", want);
	return 0;
}

/* Its reads in one snapshot: another record creating the file commits its
 * schema in one transaction, so it is seen whole or not at all (two reads
 * apart saw "application_id 0, 32 tables"). */
static int validate(pp_store *st, int fresh, char *err, size_t errlen)
{
	int began = sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
	int v = validate_snapshot(st, fresh, err, errlen);
	if (began)
		sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
	return v;
}

/* The phase_kinds table names every kind this build knows; a database made
 * before the taxonomy grew gets the new kinds when opened for writing. */
static int fill_kinds(pp_store *st, char *err, size_t errlen)
{
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(st->db, "INSERT OR IGNORE INTO phase_kinds(id, name) VALUES(?1, ?2)",
				    -1, &s, NULL);
	for (int k = 0; rc == SQLITE_OK && k < PP_KIND_COUNT; k++) {
		sqlite3_bind_int(s, 1, k);
		sqlite3_bind_text(s, 2, pp_kind_name((pp_kind)k), -1, SQLITE_STATIC);
		rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(st->db);
		sqlite3_reset(s);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: cannot write the phase kinds: %s", st->path,
			 sqlite3_errmsg(st->db));
		return -1;
	}
	return 0;
}

/* An existing database is checked before anything is appended to it:
 * writing into a file with damaged pages spreads the damage. All of it up
 * to CHECK_ALL_BYTES (quick_check reads every page: ~2.5 ms of CPU per MB
 * here, taken from a program that runs meanwhile: at 16 MiB, the previous
 * bound, a growing database's check was 96 M instructions at 3.6 MB);
 * above that, the tables an append writes in the middle of (runs,
 * strings and its index, run_meta, meta) and the free-page count (a
 * damaged free list would hand out pages in use). The event tables and
 * their by-run indexes an append only extends at their right edge, whose
 * pages SQLite checks as it descends to them (a damaged one fails the
 * ingest, which stores nothing); damage further left is reported by the
 * reader that reaches it ("malformed"). */
#define CHECK_ALL_BYTES (1u << 20)
static int check_intact(pp_store *st, char *err, size_t errlen)
{
	static const char *const small[] = {"runs", "strings", "run_meta", "meta"};
	struct stat sb;
	int all = stat(st->path, &sb) != 0 || (uint64_t)sb.st_size <= CHECK_ALL_BYTES;
	char q[64];
	for (size_t k = 0; k < (all ? 1 : sizeof small / sizeof small[0]); k++) {
		if (all)
			snprintf(q, sizeof q, "PRAGMA quick_check(1)");
		else
			snprintf(q, sizeof q, "PRAGMA quick_check(%s)", small[k]);
		sqlite3_stmt *s;
		if (sqlite3_prepare_v2(st->db, q, -1, &s, NULL) != SQLITE_OK) {
			snprintf(err, errlen, "%s: damaged database, not appending to it (%s)", st->path,
				 sqlite3_errmsg(st->db));
			return -1;
		}
		int rc = sqlite3_step(s);
		const unsigned char *t = rc == SQLITE_ROW ? sqlite3_column_text(s, 0) : NULL;
		int ok = t && strcmp((const char *)t, "ok") == 0;
		if (!ok)
			snprintf(err, errlen, "%s: damaged database, not appending to it (%s)", st->path,
				 t ? (const char *)t : pp_store_error(st));
		sqlite3_finalize(s);
		if (!ok)
			return -1;
	}
	if (!all) {
		int rc;
		int64_t pages = query_int(st->db, "PRAGMA page_count", -1, &rc);
		int64_t free_pages = rc == SQLITE_OK ? query_int(st->db, "PRAGMA freelist_count", -1, &rc) : -1;
		if (rc != SQLITE_OK || free_pages < 0 || free_pages >= pages) {
			snprintf(err, errlen, "%s: damaged database, not appending to it (free-page count %lld of %lld)",
				 st->path, (long long)free_pages, (long long)pages);
			return -1;
		}
	}
	return 0;
}

/* The indexes a table gets from its first row, made with the schema: on
 * empty tables they cost nothing to make, and a short program's rows go
 * straight into them (building them after its ingest was ~2.5 M
 * instructions: each CREATE INDEX a compile and a schema change). A long
 * first ingest drops them first and builds them after its rows
 * (pp_store_defer_indexes). */
static int create_first_row_indexes(pp_store *st, char *err, size_t errlen)
{
	char sql[3072];
	size_t sl = 0;
	for (size_t i = 0; i < N_INDEXES; i++)
		if (indexes[i].min_rows == 1)
			sl += (size_t)snprintf(sql + sl, sizeof sql - sl, "CREATE INDEX IF NOT EXISTS %s ON %s(%s);",
					       indexes[i].name, indexes[i].table, indexes[i].cols);
	return sl ? store_exec(st, sql, err, errlen) : 0;
}

/* A new database: one transaction, already in WAL mode. Nothing in it
 * predates this process, so it is written without syncs (SQLite keeps it
 * whole if we crash; only an OS crash soon after could damage the new
 * file): at close its pages are handed to the disk, not waited for.
 * SQLite's default 4 KiB pages: with 64 KiB ones a short program's
 * database was 3 MB (a root page per table and index), and a 10^6-event
 * ingest was no faster (slower in each of 6 runs).
 * 0 made, 1 another writer made it first (nothing done), -1 error. */
static int create_schema(pp_store *st, char *err, size_t errlen)
{
	char sql[256];
	if (store_exec(st, "PRAGMA synchronous=OFF; PRAGMA journal_mode=WAL;", err, errlen) != 0 ||
	    store_exec(st, "BEGIN IMMEDIATE", err, errlen) != 0)
		return -1;
	/* under the write lock: another record may have made it meanwhile */
	int rc;
	int64_t ntables = query_int(st->db, "SELECT count(*) FROM sqlite_master", 0, &rc);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: cannot read: %s", st->path, pp_store_error(st));
		goto fail;
	}
	if (ntables > 0) {
		sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
		return 1;
	}
	snprintf(sql, sizeof sql, "PRAGMA application_id=%d; PRAGMA user_version=%d", PP_APPLICATION_ID,
		 PP_SCHEMA_VERSION);
	if (store_exec(st, sql, err, errlen) != 0 || store_exec(st, pp_schema_sql, err, errlen) != 0)
		goto fail;
	snprintf(sql, sizeof sql,
		 "INSERT OR REPLACE INTO meta(key,value) VALUES('schema_version','%d');"
		 "INSERT OR REPLACE INTO meta(key,value) VALUES('application','phaseprof');",
		 PP_SCHEMA_VERSION);
	if (store_exec(st, sql, err, errlen) != 0)
		goto fail;
	if (fill_kinds(st, err, errlen) != 0 || write_digest(st, err, errlen) != 0 ||
	    create_first_row_indexes(st, err, errlen) != 0)
		goto fail;
	if (store_exec(st, "COMMIT", err, errlen) != 0)
		goto fail;
	st->schema_version = PP_SCHEMA_VERSION;
	st->schema_current = 1;
	return 0;
fail:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

/* How long one statement on a database may run: a file from outside must
 * not hang a reader (PHASEPROF_QUERY_TIMEOUT seconds; 0: no bound). */
#define QUERY_TIMEOUT_S 300

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t query_limit_ns(void)
{
	const char *e = getenv(PP_ENV_QUERY_TIMEOUT);
	char *end;
	double v = e && *e ? strtod(e, &end) : QUERY_TIMEOUT_S;
	if (e && *e && (*end || v < 0))
		v = QUERY_TIMEOUT_S;
	return v > 1e9 ? 0 : (int64_t)(v * 1e9);
}

/* Every thousand SQLite steps: nonzero stops the statement (told to give
 * up, or past its deadline). */
static int store_progress(void *ud)
{
	pp_store *st = ud;
	if (st->cancel && atomic_load(st->cancel))
		return 1;
	if (st->deadline_ns && mono_ns() > st->deadline_ns) {
		st->timed_out = 1;
		return 1;
	}
	return 0;
}

/* A reader's deadline starts with each statement. */
static int store_trace(unsigned type, void *ud, void *p, void *x)
{
	(void)p;
	(void)x;
	pp_store *st = ud;
	if (type == SQLITE_TRACE_STMT && st->limit_ns)
		st->deadline_ns = mono_ns() + st->limit_ns;
	return 0;
}

/* SQLite's settings for a file from outside: nothing in it runs as code
 * (no triggers, no functions of ours called from its schema, no writes to
 * the schema by PRAGMA), and each statement bounded in time. Views stay
 * on for the schema's own two (spans_v, ops_v); any other view is refused
 * at the open (store_check_schema). */
static int harden(pp_store *st, char *err, size_t errlen)
{
	int off = 0, on = 1;
	if (sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, &on) != SQLITE_OK ||
	    sqlite3_db_config(st->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &off) != SQLITE_OK ||
	    sqlite3_db_config(st->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &off) != SQLITE_OK ||
	    sqlite3_db_config(st->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &off) != SQLITE_OK || on != 1 ||
	    off != 0) {
		snprintf(err, errlen, "%s: cannot set SQLite's defensive options: %s", st->path, sqlite3_errmsg(st->db));
		return -1;
	}
	st->limit_ns = query_limit_ns();
	sqlite3_progress_handler(st->db, 1000, store_progress, st);
	if (st->mode != PP_STORE_WRITE && st->limit_ns &&
	    sqlite3_trace_v2(st->db, SQLITE_TRACE_STMT, store_trace, st) != SQLITE_OK) {
		snprintf(err, errlen, "%s: cannot bound query time: %s", st->path, sqlite3_errmsg(st->db));
		return -1;
	}
	return 0;
}

/* The switch to WAL needs the file to itself for a moment. While another
 * writer is switching it back at its close, SQLite answers "database is
 * locked" at once instead of asking the busy handler (4 writers opening
 * one file at once under load: 1 open in ~15 failed). Retried for as long
 * as the busy timeout would have waited. */
static int switch_to_wal(pp_store *st, char *err, size_t errlen)
{
	for (int waited_ms = 0;; waited_ms += 2) {
		int rc = sqlite3_exec(st->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			return 0;
		if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= WRITE_BUSY_MS) {
			snprintf(err, errlen, "%s: %s", st->path, sqlite3_errmsg(st->db));
			return -1;
		}
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
}

int pp_store_single_threaded(void)
{
	if (sqlite3_config(SQLITE_CONFIG_SINGLETHREAD) != SQLITE_OK ||
	    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK)
		return -1;
	return 0;
}

/* 1: appending to another user's database is allowed (--force) */
static int store_foreign_ok;
void pp_store_allow_foreign(int yes) { store_foreign_ok = yes; }
int pp_store_foreign_allowed(void) { return store_foreign_ok; }

static pp_store *store_open(const char *path, int mode, const _Atomic int *cancel, char *err, size_t errlen)
{
	if (!path || !*path) {
		snprintf(err, errlen, "no database path given");
		return NULL;
	}
	struct stat sb;
	int exists = stat(path, &sb) == 0;
	if (!exists && mode != PP_STORE_WRITE) {
		snprintf(err, errlen, "%s: no such database (%s)", path, strerror(errno));
		return NULL;
	}
	/* regular files only: opening a named pipe blocks until someone writes
	 * to it, and a device (/dev/null) would take a recording and keep nothing */
	if (exists && !S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: is %s, not a database", path,
			 S_ISDIR(sb.st_mode)    ? "a directory"
			 : S_ISFIFO(sb.st_mode) ? "a named pipe"
			 : S_ISCHR(sb.st_mode)  ? "a character device"
			 : S_ISBLK(sb.st_mode)  ? "a block device"
			 : S_ISSOCK(sb.st_mode) ? "a socket"
						: "not a regular file");
		return NULL;
	}
	if (mode == PP_STORE_WRITE) {
		char tmp[4096];
		snprintf(tmp, sizeof tmp, "%s", path);
		const char *dir = dirname(tmp);
		struct stat db;
		if (!exists && (stat(dir, &db) != 0 || !S_ISDIR(db.st_mode) || access(dir, W_OK) != 0)) {
			snprintf(err, errlen, "%s: cannot create the database: folder %s is not writable (%s)",
				 path, dir, strerror(errno));
			return NULL;
		}
		if (exists && access(path, W_OK) != 0) {
			snprintf(err, errlen, "%s: database is read-only (%s)", path, strerror(errno));
			return NULL;
		}
		/* a database someone else put in a shared folder is not ours to
		 * append to (it would get our recording, and its owner our data) */
		if (exists && sb.st_uid != geteuid() && !store_foreign_ok) {
			snprintf(err, errlen, "%s: belongs to another user (uid %u); not appending to it (--force to append)",
				 path, (unsigned)sb.st_uid);
			return NULL;
		}
	}
	/* a new file: the built-in image, else (none, or it could not be put
	 * there) SQLite creates it and create_schema fills it */
	int from_image = mode == PP_STORE_WRITE && !exists && store_image_place(path) == 0;
	if (mode == PP_STORE_WRITE && !exists && !from_image) {
		/* SQLite creates files 0644: an empty file, owner only, first */
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
	}
	pp_store *st = calloc(1, sizeof *st);
	if (!st) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	snprintf(st->path, sizeof st->path, "%s", path);
	st->mode = mode;
	/* NOMUTEX: a store is used by one thread at a time; serialized mode took
	 * a mutex in every bind call (17% of ingest time) */
	int flags = (mode == PP_STORE_WRITE ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
					    : SQLITE_OPEN_READONLY) |
		    SQLITE_OPEN_NOMUTEX;
	if (sqlite3_open_v2(path, &st->db, flags, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: cannot open: %s", path,
			 st->db ? sqlite3_errmsg(st->db) : "out of memory");
		sqlite3_close(st->db);
		free(st);
		return NULL;
	}
	/* a writer waits for another one's ingest (concurrent records) */
	sqlite3_busy_timeout(st->db, mode == PP_STORE_WRITE ? WRITE_BUSY_MS : 5000);
	/* only an existing file's checks take long; a new one is made whole */
	if (!exists)
		cancel = NULL;
	st->cancel = cancel;
	if (harden(st, err, errlen) != 0)
		goto fail;
	/* a writer's checks of an existing file get one deadline in all */
	if (mode == PP_STORE_WRITE && exists && st->limit_ns)
		st->deadline_ns = mono_ns() + st->limit_ns;
	pp_store_register_functions(st->db);
	int v = validate(st, mode != PP_STORE_READ, err, errlen);
	if (v < 0)
		goto fail;
	if (mode == PP_STORE_WRITE) {
		if (v == 1) {
			from_image = 0; /* replaced meanwhile by an empty file */
			int made = create_schema(st, err, errlen);
			if (made < 0)
				goto fail;
			/* made by another record meanwhile: open it as existing */
			if (made == 1 && (v = validate(st, 0, err, errlen)) < 0)
				goto fail;
		}
		st->fresh = v == 1 || from_image;
		/* older-but-compatible files get any tables and kinds added since */
		if (v == 0 && !from_image && check_intact(st, err, errlen) != 0) {
			if (cancel && atomic_load(cancel))
				snprintf(err, errlen, "%s: open interrupted", path);
			goto fail;
		}
		/* told to give up: now, before anything is written; from here on
		 * the writer's own statements, unbounded */
		st->cancel = NULL;
		st->deadline_ns = 0;
		if (cancel && atomic_load(cancel)) {
			snprintf(err, errlen, "%s: open interrupted", path);
			goto fail;
		}
		if (v == 0 && !from_image && !st->schema_current &&
		    (store_exec(st, pp_schema_sql, err, errlen) != 0 || fill_kinds(st, err, errlen) != 0 ||
		     write_digest(st, err, errlen) != 0))
			goto fail;
		if (v == 0 && st->schema_version < PP_SCHEMA_VERSION) {
			char sql[128];
			snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta(key,value) VALUES('schema_version','%d')",
				 PP_SCHEMA_VERSION);
			if (store_exec(st, sql, err, errlen) != 0)
				goto fail;
			st->schema_version = PP_SCHEMA_VERSION;
		}
		/* the version in the file header too, for pp_store_header_current
		 * (files from before it have 0 there) */
		int urc;
		if (v == 0 && !from_image && query_int(st->db, "PRAGMA user_version", 0, &urc) != st->schema_version) {
			char sql[64];
			snprintf(sql, sizeof sql, "PRAGMA user_version=%d", st->schema_version);
			if (store_exec(st, sql, err, errlen) != 0)
				goto fail;
		}
		/* An existing file's own pages change only in the checkpoint at
		 * close, which runs with synchronous=NORMAL: the WAL synced
		 * before them, the file after. Our commits before it go to the
		 * WAL unsynced and without automatic checkpoints: an OS crash
		 * can lose them (the WAL's checksums drop torn frames), never the
		 * file's earlier runs. The syncs saved are the WAL header's at its
		 * first frame (~1.5 ms after a short program, on this VM). The
		 * switch itself rewrites page 1 alone and is not synced either
		 * (docs/schema.md). */
		if (store_exec(st, "PRAGMA synchronous=OFF;", err, errlen) != 0 || switch_to_wal(st, err, errlen) != 0 ||
		    (!st->fresh && store_exec(st, "PRAGMA wal_autocheckpoint=0;", err, errlen) != 0) ||
		    store_exec(st, "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536;", err, errlen) != 0)
			goto fail;
		/* The log SQLite just created is synced once now, with its folder
		 * (SQLite syncs the folder at the first sync of a file it made):
		 * the checkpoint at close then syncs the log alone. Done here, in
		 * the open that record runs while the program does, it is ~0.3 ms
		 * less after the program exits. */
		sqlite3_file *wal = NULL;
		if (!st->fresh &&
		    sqlite3_file_control(st->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) == SQLITE_OK && wal &&
		    wal->pMethods && wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL) != SQLITE_OK) {
			snprintf(err, errlen, "%s-wal: cannot sync: %s", path, strerror(errno));
			goto fail;
		}
	}
	/* a file from before span folding (schema version 1), opened to read */
	st->has_span_groups = store_has_table(st, "main", "span_groups");
	pp_debug("store", "%s: opened %s: %s, schema version %d%s", path,
		 mode == PP_STORE_WRITE   ? "for writing"
		 : mode == PP_STORE_CHECK ? "to check"
					  : "for reading",
		 !exists     ? (from_image ? "new, from the built-in empty-database image"
					   : "new, schema made by SQL")
		 : st->fresh ? "existing but empty (another writer's new file), schema made now"
		 : v == 1    ? "existing, no tables yet"
			     : "existing phaseprof database",
		 st->schema_version, st->has_span_groups ? "" : " (before span groups)");
	return st;
fail:
	sqlite3_close(st->db);
	free(st);
	return NULL;
}

/* A table's largest rowid (0 when empty): its row count as far as the
 * indexes care, in one step down the b-tree. -1 on an SQLite error. */
static int64_t table_max_rowid(pp_store *st, const char *table)
{
	char q[160];
	sqlite3_stmt *s;
	snprintf(q, sizeof q, "SELECT coalesce(max(rowid),0) FROM %s", table);
	if (sqlite3_prepare_v2(st->db, q, -1, &s, NULL) != SQLITE_OK)
		return -1;
	int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
	sqlite3_finalize(s);
	return v;
}

/* One transaction: each CREATE INDEX on its own was a commit and a
 * re-read of the schema. Only tables with enough rows get theirs (see
 * indexes[]): an empty table needs none, and each CREATE INDEX costs its
 * compile and a schema change (a short program fills 4 of the tables).
 * Indexes the file has already are neither probed nor made again, here
 * or at close (st->indexed). max(rowid) stands for the count: one step
 * down the table's b-tree. A later writer whose rows take a table past
 * its mark builds the index at its own close. */
int pp_store_build_indexes(pp_store *st, char *err, size_t errlen)
{
	char sql[3072] = "";
	size_t sl = 0;
	int rc = -1, restore = 0;
	sqlite3_stmt *s = NULL;
	if (err && errlen)
		err[0] = 0;
	if (!st->indexed_known) {
		if (sqlite3_prepare_v2(st->db, "SELECT name FROM sqlite_master WHERE type='index'", -1, &s, NULL) !=
		    SQLITE_OK)
			goto out;
		while ((rc = sqlite3_step(s)) == SQLITE_ROW)
			for (size_t i = 0; i < N_INDEXES; i++)
				if (strcmp((const char *)sqlite3_column_text(s, 0), indexes[i].name) == 0)
					st->indexed |= 1u << i;
		if (rc != SQLITE_DONE)
			goto out;
		sqlite3_finalize(s);
		s = NULL;
		st->indexed_known = 1;
	}
	for (size_t i = 0; i < N_INDEXES; i++) {
		if (st->indexed & (1u << i))
			continue;
		/* one probe per table (spans has two indexes) */
		int seen = -1;
		for (size_t k = 0; k < i && seen < 0; k++)
			if (strcmp(indexes[k].table, indexes[i].table) == 0 && !(st->indexed & (1u << k)))
				seen = (int)k;
		int64_t rows = seen < 0 ? table_max_rowid(st, indexes[i].table)
					: (st->pending_index & (1u << seen)) ? indexes[i].min_rows : 0;
		if (rows < 0)
			goto out;
		if (rows >= indexes[i].min_rows) {
			st->pending_index |= 1u << i;
			sl += (size_t)snprintf(sql + sl, sizeof sql - sl, "CREATE INDEX IF NOT EXISTS %s ON %s(%s);",
					       indexes[i].name, indexes[i].table, indexes[i].cols);
		}
	}
	rc = 0;
	if (!sl)
		goto out;
	rc = -1;
	/* The sorts behind CREATE INDEX go to temporary files: with
	 * temp_store=MEMORY SQLite's sorter never spills, and the indexes of
	 * 5 M span rows held ~600 MB. On files it sorts runs of cache_size
	 * bytes (16 MiB here) and merges them, so memory stays bounded
	 * whatever the table's length. */
	if (store_exec(st, "PRAGMA temp_store=FILE; PRAGMA cache_size=-16384;", err, errlen) != 0)
		goto out;
	restore = 1;
	if (store_exec(st, "BEGIN", err, errlen) != 0)
		goto out;
	if (store_exec(st, sql, err, errlen) != 0 || store_exec(st, "COMMIT", err, errlen) != 0) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		goto out;
	}
	st->indexed |= st->pending_index;
	rc = 0;
out:
	if (restore && store_exec(st, "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536;", rc ? NULL : err,
				  rc ? 0 : errlen) != 0)
		rc = -1;
	if (rc != 0 && err && !*err)
		snprintf(err, errlen, "%.300s: %.150s", st->path, sqlite3_errmsg(st->db));
	sqlite3_finalize(s);
	st->pending_index = 0;
	return rc;
}

/* Drops the indexes of tables that are still empty, so a long first
 * ingest writes its rows without them (~2.4x faster inserts) and
 * pp_store_build_indexes makes them after, in bulk. */
int pp_store_defer_indexes(pp_store *st, char *err, size_t errlen)
{
	char sql[2048] = "";
	size_t sl = 0;
	if (err && errlen)
		err[0] = 0;
	for (size_t i = 0; i < N_INDEXES; i++) {
		int64_t rows = table_max_rowid(st, indexes[i].table);
		if (rows < 0) {
			snprintf(err, errlen, "%.300s: %.150s", st->path, sqlite3_errmsg(st->db));
			return -1;
		}
		if (rows == 0)
			sl += (size_t)snprintf(sql + sl, sizeof sql - sl, "DROP INDEX IF EXISTS %s;", indexes[i].name);
	}
	st->indexed_known = 0; /* read again at the next build */
	st->indexed = 0;
	return sl ? store_exec(st, sql, err, errlen) : 0;
}

/* A database this store created was written without syncs. Its pages are
 * handed to the disk now but not waited for (as perf.data and heaptrack's
 * files are not): the fdatasync and the folder's fsync were ~0.5 ms of a
 * short program's ~4 ms after it exits. What an OS crash could cost is
 * this new file only; a database that existed before is checkpointed with
 * synchronous=NORMAL (see store_open). */
static void writeback_fresh(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	close(fd);
}

int pp_store_header_current(const char *path)
{
	unsigned char h[100];
	struct stat sb;
	/* O_NONBLOCK: a named pipe in its place must not block (it is refused
	 * by the open that follows) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return 0;
	}
	ssize_t n = pread(fd, h, sizeof h, 0);
	close(fd);
	if (n != (ssize_t)sizeof h || memcmp(h, "SQLite format 3", 16) != 0)
		return 0;
	uint32_t user_version = (uint32_t)h[60] << 24 | (uint32_t)h[61] << 16 | (uint32_t)h[62] << 8 | h[63];
	uint32_t app = (uint32_t)h[68] << 24 | (uint32_t)h[69] << 16 | (uint32_t)h[70] << 8 | h[71];
	/* bytes 18-19: 1 rollback journal; 2 WAL, a writer at work */
	return h[18] == 1 && h[19] == 1 && app == PP_APPLICATION_ID && user_version >= 1 &&
	       user_version <= PP_SCHEMA_VERSION;
}

/* The checkpoint at close syncs the WAL, then writes the file's pages and
 * syncs them: ~0.8 ms of waiting for the log before the one sync only it
 * can do. The log's is done here, on a descriptor of our own (none on the
 * database or -shm file: closing one would drop SQLite's POSIX locks).
 * SQLite still issues every sync it would; this only makes the log clean
 * when it does, so what is durable, and when, is unchanged. */
static void *sync_ahead_main(void *arg)
{
	const char *path = arg;
	char p[sizeof ((pp_store *)0)->path + 8];
	snprintf(p, sizeof p, "%s-wal", path);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fdatasync(fd);
		close(fd);
	}
	return NULL;
}

void pp_store_sync_ahead(pp_store *st)
{
	if (st && st->mode == PP_STORE_WRITE && !st->fresh && !st->sync_ahead_running)
		st->sync_ahead_running = pthread_create(&st->sync_ahead, NULL, sync_ahead_main, st->path) == 0;
}

int pp_store_close(pp_store *st, char *err, size_t errlen)
{
	if (!st)
		return 0;
	int rc = 0;
	char e[512] = "";
	if (st->sync_ahead_running)
		pthread_join(st->sync_ahead, NULL);
	/* its statements too, whatever the mode: one left unfinalized keeps
	 * the connection from closing (and leaks it) */
	pp_store_intern_cache_free(st);
	if (st->mode == PP_STORE_WRITE) {
		/* indexes after ingest (2.4x faster inserts), then one portable file */
		if (pp_store_build_indexes(st, e, sizeof e) != 0)
			rc = -1;
		else if (sqlite3_exec(st->db,
				      st->fresh ? "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;"
						: "PRAGMA synchronous=NORMAL; PRAGMA wal_checkpoint(TRUNCATE);"
						  " PRAGMA synchronous=OFF; PRAGMA journal_mode=DELETE;",
				      NULL, NULL, NULL) != SQLITE_OK) {
			/* another writer still has it open: its close leaves the one
			 * file; the database is whole either way */
			int ec = sqlite3_errcode(st->db);
			if (ec != SQLITE_BUSY && ec != SQLITE_LOCKED) {
				snprintf(e, sizeof e, "%.300s: %.150s", st->path, sqlite3_errmsg(st->db));
				rc = -1;
			}
		}
	}
	/* every statement a store function prepares is finalized before it returns */
	PP_ASSERT(sqlite3_next_stmt(st->db, NULL) == NULL);
	if (sqlite3_close(st->db) != SQLITE_OK && rc == 0) {
		snprintf(e, sizeof e, "%.300s: close failed: %.150s", st->path, sqlite3_errmsg(st->db));
		rc = -1;
	}
	if (rc == 0 && st->mode == PP_STORE_WRITE && st->fresh)
		writeback_fresh(st->path);
	pp_debug("store", "%s: closed%s%s", st->path,
		 st->mode == PP_STORE_WRITE ? " (indexes built, log checkpointed into one file)" : "",
		 rc ? ": failed" : "");
	if (rc && err)
		snprintf(err, errlen, "%s", e);
	free(st);
	return rc;
}

int pp_store_query(pp_store *st, const char *sql, int64_t run_id, pp_row_cb cb, void *ud)
{
	return store_each(st, sql, run_id, 0, NULL, cb, ud);
}

const char *pp_store_error(pp_store *st)
{
	if (st->timed_out && sqlite3_errcode(st->db) == SQLITE_INTERRUPT) {
		snprintf(st->timeout_msg, sizeof st->timeout_msg,
			 "a query ran past %.3g s and was stopped (PHASEPROF_QUERY_TIMEOUT)", (double)st->limit_ns / 1e9);
		return st->timeout_msg;
	}
	return sqlite3_errmsg(st->db);
}

int store_each(pp_store *st, const char *sql, int64_t a, int64_t b, const char *t,
	       int (*row)(sqlite3_stmt *s, void *ud), void *ud)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	int np = sqlite3_bind_parameter_count(s);
	int rc = SQLITE_OK;
	if (np >= 1)
		rc = sqlite3_bind_int64(s, 1, a);
	if (rc == SQLITE_OK && np >= 2)
		rc = sqlite3_bind_int64(s, 2, b);
	if (rc == SQLITE_OK && np >= 3)
		rc = sqlite3_bind_text(s, 3, t, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK) {
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			if (row && row(s, ud) != 0) {
				rc = SQLITE_DONE;
				break;
			}
		}
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

typedef struct rows_acc {
	unsigned char *v;
	size_t size;
	int n, cap, failed;
	void (*read)(sqlite3_stmt *s, void *elem);
} rows_acc;

static int rows_row(sqlite3_stmt *s, void *ud)
{
	rows_acc *a = ud;
	if (a->n == a->cap) {
		/* PP_GROW's arithmetic for an element size known at run time */
		size_t c = pp_grow_cap((size_t)a->cap, (size_t)a->n + 1, a->size);
		unsigned char *v = c ? realloc(a->v, c * a->size) : NULL;
		if (!v) {
			a->failed = 1;
			return 1;
		}
		a->v = v;
		a->cap = (int)c;
	}
	void *e = a->v + (size_t)a->n++ * a->size;
	memset(e, 0, a->size);
	a->read(s, e);
	return 0;
}

int store_rows(pp_store *st, const char *sql, int64_t a, int64_t b, const char *t, size_t size,
	       void (*read)(sqlite3_stmt *s, void *elem), void *out, int *n)
{
	rows_acc acc = {NULL, size, 0, 0, 0, read};
	int rc = store_each(st, sql, a, b, t, rows_row, &acc) != 0 || acc.failed ? -1 : 0;
	if (rc != 0) {
		free(acc.v);
		acc.v = NULL;
		acc.n = 0;
	}
	memcpy(out, &acc.v, sizeof acc.v); /* out: the address of the caller's T * */
	*n = acc.n;
	return rc;
}

/* SQLite's messages can quote schema text across lines: a refusal stays one
 * line, whatever path it took. */
pp_store *pp_store_open(const char *path, int mode, char *err, size_t errlen)
{
	return pp_store_open_cancellable(path, mode, NULL, err, errlen);
}

pp_store *pp_store_open_cancellable(const char *path, int mode, const _Atomic int *cancel, char *err,
				    size_t errlen)
{
	pp_store *st = store_open(path, mode, cancel, err, errlen);
	if (!st && err)
		for (char *c = err; *c; c++)
			if ((unsigned char)*c < 0x20)
				*c = ' ';
	if (!st)
		pp_debug("store", "%s: not opened: %s", path ? path : "(none)", err ? err : "");
	return st;
}
