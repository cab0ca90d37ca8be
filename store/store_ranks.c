/*
 * store_ranks.c — the store's side of distributed jobs: which runs are the
 * ranks of which job, the events their clocks are aligned on, the copy of
 * per-rank databases into one (merge) and the clock offsets merge found.
 */
#include "store.h"
#include "store_internal.h"
#include "phaseprof.h"
#include "pp_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void col_text(char *dst, size_t n, sqlite3_stmt *s, int col)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	snprintf(dst, n, "%s", t ? (const char *)t : "");
}

typedef struct parent_of { int64_t id, parent; } parent_of;

static int cmp_parent(const void *a, const void *b)
{
	int64_t x = ((const parent_of *)a)->id, y = ((const parent_of *)b)->id;
	return (x > y) - (x < y);
}

static int cmp_run_id(const void *a, const void *b)
{
	int64_t x = ((const pp_rank_run *)a)->run_id, y = ((const pp_rank_run *)b)->run_id;
	return (x > y) - (x < y);
}

static int cmp_rank(const void *a, const void *b)
{
	const pp_rank_run *x = a, *y = b;
	int c = strcmp(x->job, y->job);
	if (c)
		return c;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->run_id > y->run_id) - (x->run_id < y->run_id);
}

int pp_store_rank_runs(pp_store *st, pp_rank_run **out, int *n)
{
	*out = NULL;
	*n = 0;
	static const char sql[] =
		"SELECT r.id, CAST(rk.value AS INTEGER),"
		" coalesce((SELECT CAST(value AS INTEGER) FROM run_meta WHERE run_id=r.id AND key='world_size'),-1),"
		" coalesce((SELECT CAST(value AS INTEGER) FROM run_meta WHERE run_id=r.id AND key='local_rank'),-1),"
		" coalesce((SELECT value FROM run_meta WHERE run_id=r.id AND key='job'),''),"
		" coalesce(r.host,''), coalesce(r.status,''), coalesce(r.start_unix_ns,0), coalesce(r.duration_ns,0),"
		" coalesce((SELECT CAST(value AS INTEGER) FROM run_meta WHERE run_id=r.id AND key='clock.offset_ns'),0),"
		" coalesce((SELECT CAST(value AS INTEGER) FROM run_meta WHERE run_id=r.id AND key='clock.uncertainty_ns'),-1),"
		" coalesce(r.term_signal,0), coalesce(r.exit_code,-1)"
		" FROM runs r JOIN run_meta rk ON rk.run_id = r.id AND rk.key = 'rank' ORDER BY r.id";
	sqlite3_stmt *s = NULL, *p = NULL;
	parent_of *par = NULL;
	int npar = 0, cap = 0, rc = -1;
	if (sqlite3_prepare_v2(st->db, "SELECT id, coalesce(parent_run,0) FROM runs ORDER BY id", -1, &p, NULL) !=
	    SQLITE_OK)
		goto done;
	int step;
	while ((step = sqlite3_step(p)) == SQLITE_ROW) {
		if (PP_GROW(par, npar + 1, cap) != 0)
			goto done;
		par[npar++] = (parent_of){sqlite3_column_int64(p, 0), sqlite3_column_int64(p, 1)};
	}
	if (step != SQLITE_DONE || sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		goto done;
	cap = 0;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(*out, *n + 1, cap) != 0)
			goto done;
		pp_rank_run *r = &(*out)[(*n)++];
		memset(r, 0, sizeof *r);
		r->run_id = sqlite3_column_int64(s, 0);
		r->rank = sqlite3_column_int(s, 1);
		r->world_size = sqlite3_column_int(s, 2);
		r->local_rank = sqlite3_column_int(s, 3);
		col_text(r->job, sizeof r->job, s, 4);
		col_text(r->host, sizeof r->host, s, 5);
		col_text(r->status, sizeof r->status, s, 6);
		r->start_unix_ns = sqlite3_column_int64(s, 7);
		r->duration_ns = sqlite3_column_int64(s, 8);
		r->clock_offset_ns = sqlite3_column_int64(s, 9);
		r->clock_uncertainty_ns = sqlite3_column_int64(s, 10);
		r->term_signal = sqlite3_column_int(s, 11);
		r->exit_code = sqlite3_column_int(s, 12);
	}
	if (step != SQLITE_DONE)
		goto done;
	/* A process a rank forks or execs inherits its launcher variables: the
	 * rank is the topmost run claiming it, its descendants are helpers. */
	char *helper_of = calloc((size_t)(*n ? *n : 1), 1);
	if (!helper_of)
		goto done;
	for (int i = 0; i < *n; i++) {
		pp_rank_run *r = &(*out)[i];
		int helper = 0;
		int64_t id = r->run_id;
		for (int hops = 0; hops < 64 && !helper; hops++) {
			parent_of key = {id, 0};
			parent_of *h = bsearch(&key, par, (size_t)npar, sizeof *par, cmp_parent);
			if (!h || !h->parent)
				break;
			id = h->parent;
			/* the ranked runs are still in id order here */
			pp_rank_run pk = {.run_id = id};
			const pp_rank_run *p = bsearch(&pk, *out, (size_t)*n, sizeof **out, cmp_run_id);
			if (p && p->rank == r->rank && strcmp(p->job, r->job) == 0)
				helper = 1;
		}
		helper_of[i] = (char)helper;
	}
	int k = 0;
	for (int i = 0; i < *n; i++)
		if (!helper_of[i])
			(*out)[k++] = (*out)[i];
	free(helper_of);
	*n = k;
	if (k > 1)
		qsort(*out, (size_t)k, sizeof **out, cmp_rank);
	rc = 0;
done:
	sqlite3_finalize(s);
	sqlite3_finalize(p);
	free(par);
	if (rc != 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int pp_store_rank_of(pp_store *st, int64_t run_id, pp_rank_run *out)
{
	pp_rank_run *all;
	int n;
	if (pp_store_rank_runs(st, &all, &n) != 0)
		return -1;
	int rc = 1;
	for (int i = 0; i < n; i++)
		if (all[i].run_id == run_id) {
			*out = all[i];
			rc = 0;
		}
	free(all);
	return rc;
}

/* Collectives every rank of a job enters in the same order and none leaves
 * before all have entered: what clocks are aligned on. */
int pp_store_sync_events(pp_store *st, int64_t run_id, pp_sync_event **out, int *n)
{
	*out = NULL;
	*n = 0;
	char sql[640];
	snprintf(sql, sizeof sql,
		 "SELECT s.start_ns, s.end_ns, coalesce(n.value,'') FROM spans s LEFT JOIN strings n ON n.id = s.name_id"
		 " WHERE s.run_id = ?1 AND s.end_ns IS NOT NULL AND ((s.kind = %d AND n.value IN"
		 " ('MPI_Init','MPI_Init_thread','init_process_group')) OR (s.kind = %d AND n.value IN"
		 " ('MPI_Barrier','MPI_Allreduce','barrier','all_reduce')))"
		 " ORDER BY s.start_ns",
		 PP_COMM_INIT, PP_COMM);
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	int cap = 0, step;
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		if (PP_GROW(*out, *n + 1, cap) != 0) {
			step = SQLITE_NOMEM;
			break;
		}
		pp_sync_event *e = &(*out)[(*n)++];
		e->start_ns = sqlite3_column_int64(s, 0);
		e->end_ns = sqlite3_column_int64(s, 1);
		col_text(e->name, sizeof e->name, s, 2);
	}
	sqlite3_finalize(s);
	if (step != SQLITE_DONE) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

int pp_store_set_clock_offset(pp_store *st, int64_t run_id, int64_t offset_ns, int64_t uncertainty_ns,
			      const char *how)
{
	sqlite3_stmt *u = NULL, *d = NULL, *i = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(st->db, "UPDATE runs SET start_unix_ns = start_unix_ns + ?2 WHERE id = ?1", -1, &u,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
			       "DELETE FROM run_meta WHERE run_id = ?1 AND key IN"
			       " ('clock.offset_ns','clock.uncertainty_ns','clock.aligned_on')",
			       -1, &d, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db, "INSERT INTO run_meta(run_id, key, value) VALUES(?1, ?2, ?3)", -1, &i, NULL) !=
		    SQLITE_OK)
		goto done;
	/* a second alignment replaces the first: undo the old offset */
	pp_rank_run old;
	int64_t prev = pp_store_rank_of(st, run_id, &old) == 0 ? old.clock_offset_ns : 0;
	sqlite3_bind_int64(u, 1, run_id);
	sqlite3_bind_int64(u, 2, offset_ns - prev);
	sqlite3_bind_int64(d, 1, run_id);
	if (sqlite3_step(u) != SQLITE_DONE || sqlite3_step(d) != SQLITE_DONE)
		goto done;
	char v[32];
	const char *keys[3] = {"clock.offset_ns", "clock.uncertainty_ns", "clock.aligned_on"};
	for (int k = 0; k < 3; k++) {
		if (k < 2)
			snprintf(v, sizeof v, "%lld", (long long)(k == 0 ? offset_ns : uncertainty_ns));
		sqlite3_reset(i);
		sqlite3_bind_int64(i, 1, run_id);
		sqlite3_bind_text(i, 2, keys[k], -1, SQLITE_STATIC);
		sqlite3_bind_text(i, 3, k < 2 ? v : (how ? how : ""), -1, SQLITE_STATIC);
		if (sqlite3_step(i) != SQLITE_DONE)
			goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(u);
	sqlite3_finalize(d);
	sqlite3_finalize(i);
	return rc;
}

/* ---- merge: copy every run of another database into this one ---- */

static int64_t max_id(pp_store *st, const char *table)
{
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT coalesce(max(id),0) FROM main.%s", table);
	sqlite3_stmt *s;
	int64_t v = -1;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			v = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	return v;
}

/* Columns holding string ids, remapped through the temporary map. */
static int is_string_col(const char *table, const char *col)
{
	static const char *const cols[] = {
		"spans.name_id", "counters.name_id", "marks.name_id", "ops.name_id", "ops.type_id",
		"graph_nodes.name_id", "graph_nodes.op_id", "graph_nodes.device_id", "allocations.source_id",
		"libraries.path_id", "io.path_id", "frames.symbol_id", "frames.module_id",
		"gpu_activity.name_id", "comm.op_id", "span_groups.name_id", NULL,
	};
	char key[128];
	snprintf(key, sizeof key, "%s.%s", table, col);
	for (int i = 0; cols[i]; i++)
		if (strcmp(cols[i], key) == 0)
			return 1;
	return 0;
}

/* INSERT INTO main.t(cols) SELECT <mapped cols> FROM src.t, for the columns
 * both schemas have. */
static int copy_table(pp_store *st, const char *table, int64_t roff, int64_t soff, int64_t goff, char *err,
		      size_t errlen)
{
	if (!store_has_table(st, "src", table))
		return 0;
	char sql[4096], cols[1536] = "", sel[2560] = "";
	snprintf(sql, sizeof sql,
		 "SELECT m.name FROM pragma_table_info('%s', 'main') m JOIN pragma_table_info('%s', 'src') s"
		 " ON s.name = m.name ORDER BY m.cid",
		 table, table);
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", st->path, sqlite3_errmsg(st->db));
		return -1;
	}
	size_t nc = 0, ns = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(s, 0);
		char expr[160];
		int is_runs = strcmp(table, "runs") == 0, is_spans = strcmp(table, "spans") == 0;
		int is_graphs = strcmp(table, "graphs") == 0, is_gchild = !strncmp(table, "graph_", 6);
		if (strcmp(table, "findings") == 0 && strcmp(c, "id") == 0)
			continue;
		if (strcmp(c, "run_id") == 0 || (is_runs && strcmp(c, "id") == 0))
			snprintf(expr, sizeof expr, "x.\"%s\" + %lld", c, (long long)roff);
		else if (is_runs && strcmp(c, "parent_run") == 0)
			snprintf(expr, sizeof expr, "CASE WHEN x.parent_run > 0 THEN x.parent_run + %lld END",
				 (long long)roff);
		else if ((is_spans && (strcmp(c, "id") == 0 || strcmp(c, "parent_id") == 0)) ||
			 (strcmp(table, "span_groups") == 0 && strcmp(c, "parent_id") == 0))
			snprintf(expr, sizeof expr, "x.\"%s\" + %lld", c, (long long)soff);
		else if ((is_graphs && strcmp(c, "id") == 0) || (is_gchild && strcmp(c, "graph_id") == 0))
			snprintf(expr, sizeof expr, "x.\"%s\" + %lld", c, (long long)goff);
		else if (is_string_col(table, c))
			snprintf(expr, sizeof expr, "(SELECT new FROM temp.pp_smap WHERE old = x.\"%s\")", c);
		else
			snprintf(expr, sizeof expr, "x.\"%s\"", c);
		nc += (size_t)snprintf(cols + nc, sizeof cols - nc, "%s\"%s\"", nc ? "," : "", c);
		ns += (size_t)snprintf(sel + ns, sizeof sel - ns, "%s%s", ns ? "," : "", expr);
		if (nc >= sizeof cols || ns >= sizeof sel)
			break;
	}
	sqlite3_finalize(s);
	if (nc >= sizeof cols || ns >= sizeof sel) {
		snprintf(err, errlen, "%s: table %s has too many columns to copy", st->path, table);
		return -1;
	}
	if (!nc)
		return 0;
	int w = snprintf(sql, sizeof sql, "INSERT INTO main.\"%s\"(%s) SELECT %s FROM src.\"%s\" x", table, cols, sel,
			 table);
	if (w < 0 || (size_t)w >= sizeof sql) {
		snprintf(err, errlen, "%s: table %s has too many columns to copy", st->path, table);
		return -1;
	}
	return store_exec(st, sql, err, errlen);
}

int pp_store_merge_file(pp_store *st, const char *src_path, int64_t *first_run, int *n_runs, char *err,
			size_t errlen)
{
	static const char *const tables[] = {
		"runs", "run_meta", "threads", "spans", "counters", "marks", "ops", "losses", "graphs",
		"graph_nodes", "graph_edges", "allocations", "libraries", "io", "frames", "stacks", "samples",
		"gpu_activity", "gpu_status", "findings", "comm", "span_groups", NULL,
	};
	*first_run = 0;
	*n_runs = 0;
	int attached = 0, in_tx = 0, rc = -1;
	sqlite3_stmt *s = NULL;
	/* a merge's temporary tables and index sorts grow with the job: on disk,
	 * not in memory (the store's default), so memory stays flat */
	if (store_exec(st, "PRAGMA temp_store=FILE", err, errlen) != 0)
		return -1;
	if (sqlite3_prepare_v2(st->db, "ATTACH DATABASE ?1 AS src", -1, &s, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(s, 1, src_path, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(s);
	s = NULL;
	attached = 1;
	/* nothing the file carries runs here either */
	if (store_check_schema(st, "src", src_path, err, errlen) != 0)
		goto out;
	int64_t roff = max_id(st, "runs"), soff = max_id(st, "spans"), goff = max_id(st, "graphs");
	if (roff < 0 || soff < 0 || goff < 0)
		goto fail;
	if (store_exec(st, "BEGIN", err, errlen) != 0)
		goto out;
	in_tx = 1;
	if (store_exec(st,
		  "INSERT OR IGNORE INTO main.strings(value) SELECT value FROM src.strings;"
		  "DROP TABLE IF EXISTS temp.pp_smap;"
		  "CREATE TEMP TABLE pp_smap(old INTEGER PRIMARY KEY, new INTEGER);"
		  "INSERT INTO temp.pp_smap SELECT s.id, m.id FROM src.strings s JOIN main.strings m ON m.value = s.value;",
		  err, errlen) != 0)
		goto out;
	for (int t = 0; tables[t]; t++)
		if (copy_table(st, tables[t], roff, soff, goff, err, errlen) != 0)
			goto out;
	if (store_exec(st, "DROP TABLE temp.pp_smap; COMMIT", err, errlen) != 0)
		goto out;
	in_tx = 0;
	if (sqlite3_prepare_v2(st->db, "SELECT min(id), count(*) FROM src.runs", -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_ROW)
		goto fail;
	*first_run = sqlite3_column_int64(s, 0) + roff;
	*n_runs = sqlite3_column_int(s, 1);
	rc = 0;
	goto out;
fail:
	snprintf(err, errlen, "%s: %s", src_path, sqlite3_errmsg(st->db));
out:
	sqlite3_finalize(s);
	if (in_tx)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	if (attached)
		sqlite3_exec(st->db, "DETACH DATABASE src", NULL, NULL, NULL);
	return rc;
}

int pp_store_comm_totals(pp_store *st, int64_t run_id, int64_t *calls, int64_t *bytes)
{
	*calls = *bytes = 0;
	if (!store_has_table(st, "main", "comm"))
		return 0;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "SELECT count(*), coalesce(sum(bytes),0) FROM comm WHERE run_id = ?1", -1, &s,
			       NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, run_id);
	int rc = -1;
	if (sqlite3_step(s) == SQLITE_ROW) {
		*calls = sqlite3_column_int64(s, 0);
		*bytes = sqlite3_column_int64(s, 1);
		rc = 0;
	}
	sqlite3_finalize(s);
	return rc;
}
