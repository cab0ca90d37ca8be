/* The row spec (record/include/pp_rows.h) against the store: every spec
 * table and column exists in a fresh database made from schema.sql, in the
 * spec's order, with a compatible type; the typed emitters' rows (PP_NULL
 * included) land where the spec says; a row that does not fit its table is
 * dropped and noted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "phaseprof.h"
#include "pp_rows.h"
#include "store.h"
#include "store_internal.h"
#include "pp_testutil.h"

static char tmpdir[256];

typedef struct spec {
	const char *id, *table, *fmt, *cols;
	enum pp_row_how how;
} spec;

static const spec specs[] = {
#define SPEC(id, table, how) {#id, table, PP_ROW_FMT(id), PP_ROW_NAMES(id), PP_ROW_##how},
	PP_ROW_TABLES(SPEC)
#undef SPEC
};
#define N_SPECS (sizeof specs / sizeof specs[0])

/* The declared type a spec letter needs: s is an interned strings id. */
static const char *sql_type(char letter)
{
	switch (letter) {
	case 'i':
	case 's':
		return "INTEGER";
	case 'd':
		return "REAL";
	case 't':
		return "TEXT";
	}
	return "?";
}

/* Problems of one spec table in db, each printed; 0 if it fits. */
static int check_table(sqlite3 *db, const spec *sp)
{
	char q[160];
	snprintf(q, sizeof q, "SELECT cid, name, upper(type) FROM pragma_table_info('%s')", sp->table);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db, q, -1, &s, NULL), SQLITE_OK);
	int bad = 0, n_table = 0, matched = 0, last_cid = -1, has_run_id = 0;
	char names[64][64], types[64][16];
	while (sqlite3_step(s) == SQLITE_ROW && n_table < 64) {
		snprintf(names[n_table], sizeof names[0], "%s", (const char *)sqlite3_column_text(s, 1));
		snprintf(types[n_table], sizeof types[0], "%s", (const char *)sqlite3_column_text(s, 2));
		has_run_id |= strcmp(names[n_table], "run_id") == 0;
		n_table++;
	}
	sqlite3_finalize(s);
	if (n_table == 0) {
		printf("%s: no table %s in schema.sql\n", sp->id, sp->table);
		return 1;
	}
	/* the raw samples row is symbolised, not stored: names only */
	int check_types = strcmp(sp->id, "samples_raw") != 0;
	const char *c = sp->cols;
	for (size_t k = 0; sp->fmt[k]; k++) {
		const char *e = strchr(c + 1, ',');
		size_t len = e ? (size_t)(e - c - 1) : strlen(c + 1);
		int cid = -1;
		for (int j = 0; j < n_table; j++)
			if (strlen(names[j]) == len && strncmp(names[j], c + 1, len) == 0)
				cid = j;
		if (cid < 0) {
			printf("%s: column %.*s not in table %s\n", sp->id, (int)len, c + 1, sp->table);
			bad++;
		} else {
			matched++;
			if (cid < last_cid) {
				printf("%s: column %s out of the table's order\n", sp->id, names[cid]);
				bad++;
			}
			last_cid = cid;
			if (check_types && strcmp(types[cid], sql_type(sp->fmt[k])) != 0) {
				printf("%s: column %s is %s, the spec's '%c' needs %s\n", sp->id, names[cid],
				       types[cid], sp->fmt[k], sql_type(sp->fmt[k]));
				bad++;
			}
		}
		c = e ? e : c + strlen(c);
	}
	if (*c) {
		printf("%s: more column names than format letters\n", sp->id);
		bad++;
	}
	if (sp->how == PP_ROW_RUN && !has_run_id) {
		printf("%s: table %s has no run_id for ingest to fill\n", sp->id, sp->table);
		bad++;
	}
	/* beyond the spec, only what the store fills itself */
	for (int j = 0; j < n_table; j++) {
		int in_spec = 0;
		for (const char *p = sp->cols; (p = strstr(p, names[j])) != NULL; p++)
			if (p[-1] == ',' && (p[strlen(names[j])] == ',' || !p[strlen(names[j])]))
				in_spec = 1;
		if (!in_spec && strcmp(names[j], "run_id") != 0 && strcmp(names[j], "id") != 0) {
			printf("%s: table %s has column %s the spec lacks\n", sp->id, sp->table, names[j]);
			bad++;
		}
	}
	return bad;
}

static pp_store *fresh_store(const char *name)
{
	char db[512], err[256];
	snprintf(db, sizeof db, "%s/%s", tmpdir, name);
	remove(db);
	pp_store *st = pp_store_open(db, PP_STORE_WRITE, err, sizeof err);
	if (!st)
		fail_msg("%s", err);
	return st;
}

static void test_spec_matches_schema(void **state)
{
	(void)state;
	pp_store *st = fresh_store("schema.db");
	int bad = 0;
	for (size_t i = 0; i < N_SPECS; i++)
		bad += check_table(pp_store_db(st), &specs[i]);
	assert_int_equal(bad, 0);
	/* the check sees a wrong spec: a missing column, a wrong type, a
	 * reorder, a missing table, a table column the spec lacks */
	const spec wrong[] = {
		{"w1", "io", "iitiiiii", ",tid,path_id,op,calls,bytes,time_ns,small_calls,nope", PP_ROW_RUN},
		{"w2", "marks", "iti", ",tid,name_id,ts_ns", PP_ROW_RUN},
		{"w3", "marks", "iis", ",tid,ts_ns,name_id", PP_ROW_RUN},
		{"w4", "no_such", "i", ",x", PP_ROW_RUN},
		{"w5", "marks", "is", ",tid,name_id", PP_ROW_RUN},
	};
	for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
		assert_true(check_table(pp_store_db(st), &wrong[i]) > 0);
	pp_store_close(st, NULL, 0);
}

static void test_spec_well_formed(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_SPECS; i++) {
		size_t commas = 0;
		for (const char *c = specs[i].cols; *c; c++)
			commas += *c == ',';
		assert_int_equal(commas, strlen(specs[i].fmt));
		assert_true(strspn(specs[i].fmt, "idst") == strlen(specs[i].fmt));
		assert_true(strlen(specs[i].fmt) < 64); /* ingest's MAX_ROW_COLS */
	}
	assert_string_equal(PP_ROW_FMT(gpu_activity), "tiiiiiisiiiiiiitttii");
	assert_string_equal(PP_ROW_NAMES(marks), ",tid,name_id,ts_ns");
}

static void test_emitters_round_trip(void **state)
{
	(void)state;
	char spool[512], db[512];
	snprintf(spool, sizeof spool, "%s/rows.spool", tmpdir);
	snprintf(db, sizeof db, "%s/rows.db", tmpdir);
	assert_int_equal(pp_rowv("io", "i", (pp_cell[]){{.v.i = 1}}), -1); /* closed */
	assert_int_equal(pp_open(&(pp_options){.spool_path = spool, .label = "rows"}), 0);
	assert_int_equal(pp_row_allocations(7, 100, "malloc", "summary", 3, 4096, 50, 2048, PP_NULL,
					    PP_NULL),
			 0);
	assert_int_equal(pp_row_allocations(0, 100, "malloc", "histogram", 9, PP_NULL, PP_NULL,
					    PP_NULL, PP_NULL, 64),
			 0);
	assert_int_equal(pp_row_libraries("/lib/libz.so", 0x1000, 4096, 10, 20, PP_NULL, PP_NULL,
					  PP_NULL, 1, "dlopen"),
			 0);
	assert_int_equal(pp_row_gpu_activity("kernel", 1000, 2000, 0, 1, 7, 42, "gemm", 8, 1, 1, 128, 1,
					     1, PP_NULL, NULL, NULL, NULL, 5, 99),
			 0);
	/* the collector's old encoding (integers as decimal text) stores the same */
	assert_int_equal(pp_row("gpu_activity", "ttttttts" "tttttttttttt", "kernel", "1000", "2000",
				"0", "1", "7", "43", "gemm", "8", "1", "1", "128", "1", "1", NULL, NULL,
				NULL, NULL, "5", "99"),
			 0);
	assert_int_equal(pp_row_losses("unit", 2, NULL), 0);
	assert_int_equal(pp_row_counters(7, "c", 5, 2.5), 0);
	assert_int_equal(pp_row_comm(7, "allreduce", 10, 20, 64, -1, 4), 0);
	assert_int_equal(pp_rowv("io", "x", (pp_cell[]){{.v.i = 1}}), -1); /* unknown letter */
	assert_int_equal(pp_row("marks", "ii", (int64_t)1, (int64_t)2), 0); /* one short: dropped */
	assert_int_equal(pp_close(), 0);

	pp_ingest_result res;
	pp_store *st = ppt_ingest(spool, db, &res);
	assert_int_equal(res.rows_lost, 1);
	assert_non_null(strstr(res.note, "row for marks has 3 values, table has 4 columns"));
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM allocations a JOIN strings s ON s.id=a.source_id "
				       "WHERE s.value='malloc' AND kind='summary' AND tid=7 AND count=3 "
				       "AND bytes=4096 AND time_ns=50 AND in_use=2048 AND peak IS NULL "
				       "AND size_class IS NULL"),
			 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM allocations WHERE kind='histogram' "
				       "AND bytes IS NULL AND in_use IS NULL AND size_class=64"),
			 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM libraries l JOIN strings s ON s.id=l.path_id "
				       "WHERE s.value='/lib/libz.so' AND mapped_ns=20 AND end_ns IS NULL "
				       "AND depth=1 AND via='dlopen'"),
			 1);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM gpu_activity g JOIN strings s ON s.id=g.name_id "
				       "WHERE s.value='gemm' AND typeof(start_ns)='integer' "
				       "AND typeof(grid_x)='integer' AND bytes IS NULL AND copy_kind IS NULL "
				       "AND external_id=5 AND tid=99 AND block_x=128"),
			 2);
	assert_int_equal(ppt_q_int(st, "SELECT sum(correlation_id) FROM gpu_activity"), 85);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM losses WHERE source='unit' AND count=2 "
				       "AND detail IS NULL"),
			 1);
	assert_int_equal(ppt_q_int(st, "SELECT CAST(value*10 AS INTEGER) FROM counters WHERE tid=7"), 25);
	assert_int_equal(ppt_q_int(st, "SELECT count(*) FROM comm c JOIN strings s ON s.id=c.op_id "
				       "WHERE s.value='allreduce' AND peer=-1 AND comm_size=4 AND bytes=64"),
			 1);
	pp_store_close(st, NULL, 0);
}

int main(void)
{
	if (ppt_tmpdir(tmpdir, sizeof tmpdir, "pp-test-rows") != 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_well_formed),
		cmocka_unit_test(test_spec_matches_schema),
		cmocka_unit_test(test_emitters_round_trip),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	ppt_rmtree(tmpdir);
	return rc;
}
