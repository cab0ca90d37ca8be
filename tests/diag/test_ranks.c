/* The rank rules (diag/rules_ranks.c) on hand-built jobs: each
 * firing with the right rank, phase and numbers, and quiet on balanced,
 * noisy and merely staggered jobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diag_internal.h"

#define MS 1000000LL
#define S 1000000000LL

static diag_job job;
static diag_run run;
static diag_ctx ctx;
static int torch_run; /* the job is a PyTorch one (DIAG_SAY's words) */

/* n ranks, started 5 ms apart, 300 ms to MPI_Init (1.5 s in it), first
 * barrier right after, `steps` steps of 100 ms with 10 ms allreduce */
static void make_job(int n, int steps)
{
	memset(&job, 0, sizeof job);
	snprintf(job.job, sizeof job.job, "openmpi:1");
	job.world_size = n;
	job.n = n;
	job.ranks = calloc((size_t)n, sizeof *job.ranks);
	for (int i = 0; i < n; i++) {
		diag_rank *k = &job.ranks[i];
		k->rank = i;
		k->run_id = 10 + i;
		snprintf(k->host, sizeof k->host, "node%d", i / 2);
		snprintf(k->status, sizeof k->status, "complete");
		k->origin_ns = 1700000000 * S + i * 5 * MS;
		k->init_start = 300 * MS - i * 5 * MS; /* all arrive at the same time */
		k->init_end = k->init_start + 1500 * MS;
		snprintf(k->init_name, sizeof k->init_name, "MPI_Init");
		k->coll_start = k->init_end + 1 * MS;
		k->coll_end = k->coll_start + 1 * MS;
		snprintf(k->coll_name, sizeof k->coll_name, "MPI_Barrier");
		k->pre = calloc(1, sizeof *k->pre);
		k->n_pre = 1;
		k->pre[0] = (diag_phase){PP_LIBRARY_LOAD, "libmpi.so.40", 150 * MS};
		k->n_steps = steps;
		k->step_ns = calloc((size_t)(steps ? steps : 1), sizeof *k->step_ns);
		k->step_comm_ns = calloc((size_t)(steps ? steps : 1), sizeof *k->step_comm_ns);
		for (int s = 0; s < steps; s++) {
			k->step_ns[s] = 100 * MS;
			k->step_comm_ns[s] = 10 * MS;
		}
		k->end_ns = k->coll_end + steps * 100 * MS + 50 * MS;
		k->comm_calls = steps + 2;
		k->comm_bytes = steps * 8192;
	}
}

static void check(void)
{
	memset(&run, 0, sizeof run);
	run.run_id = 10;
	run.torch = torch_run;
	memset(&ctx, 0, sizeof ctx);
	ctx.run = &run;
	diag_ranks_check(&job, &ctx);
	for (int i = 0; i < ctx.n; i++)
		printf("  [%s] %s: %s\n    %s\n", ctx.f[i].severity, ctx.f[i].rule, ctx.f[i].title, ctx.f[i].evidence);
}

static int teardown(void **state)
{
	(void)state;
	diag_job_free(&job);
	free(ctx.f);
	memset(&ctx, 0, sizeof ctx);
	torch_run = 0;
	return 0;
}

static const pp_finding *find(const char *rule)
{
	int i = pp_diag_find(ctx.f, ctx.n, rule);
	return i >= 0 ? &ctx.f[i] : NULL;
}

static void test_balanced_quiet(void **state)
{
	(void)state;
	make_job(4, 20);
	check();
	assert_int_equal(ctx.n, 0);
}

static void test_noisy_balanced_quiet(void **state)
{
	(void)state;
	make_job(8, 30);
	srand(7);
	for (int i = 0; i < job.n; i++) {
		diag_rank *k = &job.ranks[i];
		k->init_start += (rand() % 200 - 100) * MS; /* +-100 ms arrival jitter */
		for (int s = 0; s < k->n_steps; s++) {
			int64_t comp = 90 * MS + (rand() % 30 - 15) * MS; /* +-15 ms compute noise */
			k->step_comm_ns[s] = 5 * MS + rand() % (10 * MS);
			k->step_ns[s] = comp + k->step_comm_ns[s];
		}
	}
	check();
	assert_int_equal(ctx.n, 0);
}

static void test_launch_stagger_quiet(void **state)
{
	(void)state;
	/* the launcher started rank 3 1.2 s late; the rank itself did nothing extra */
	make_job(4, 10);
	job.ranks[3].origin_ns += 1200 * MS;
	check();
	assert_null(find("rank_init_skew"));
	assert_null(find("rank_first_collective_skew"));
}

static void test_init_skew_names_rank_and_phase(void **state)
{
	(void)state;
	make_job(4, 10);
	diag_rank *k = &job.ranks[2];
	k->pre = realloc(k->pre, 2 * sizeof *k->pre);
	k->pre[1] = (diag_phase){PP_WEIGHT_LOAD, "load shard", 2 * S};
	k->n_pre = 2;
	k->init_start += 2 * S;
	k->init_end = k->init_start + 100 * MS; /* it waited for nobody */
	for (int i = 0; i < job.n; i++) {
		if (i != 2)
			job.ranks[i].init_end += 2 * S; /* the others waited in MPI_Init */
		job.ranks[i].end_ns += 2 * S;
	}
	check();
	const pp_finding *f = find("rank_init_skew");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 2 reached MPI_Init 2.00 s after the other ranks"));
	assert_non_null(strstr(f->evidence, "weight_load 'load shard'"));
	assert_non_null(strstr(f->evidence, "waited 6.00 s in total"));
	assert_non_null(strstr(f->evidence, "the delay is 41% of the job"));
	assert_string_equal(f->severity, "high");
}

/* The same import on every rank, one rank's slower (its host): a balanced
 * DDP job failed CI once on "Rank 0 reached init_process_group 658 ms
 * after the other ranks: its import 'torch' took longer". Information, not
 * a moderate claim; a rank-only import stays one. */
static void test_init_skew_shared_import_info(void **state)
{
	(void)state;
	make_job(2, 10);
	for (int i = 0; i < job.n; i++) {
		diag_rank *k = &job.ranks[i];
		k->pre = realloc(k->pre, 2 * sizeof *k->pre);
		k->pre[1] = (diag_phase){PP_IMPORT, "torch", (i == 0 ? 2600 : 1900) * MS};
		k->n_pre = 2;
		k->init_start += (i == 0 ? 2600 : 1900) * MS;
		k->init_end = job.ranks[0].init_start + 100 * MS;
	}
	job.ranks[1].init_end = job.ranks[0].init_end;
	check();
	const pp_finding *f = find("rank_init_skew");
	assert_non_null(f);
	assert_string_equal(f->severity, "info");
	assert_non_null(strstr(f->title, "its import 'torch' took longer"));
	assert_non_null(strstr(f->evidence, "Every rank makes this import"));
	teardown(NULL);

	/* only the late rank imports it: the job's work */
	make_job(2, 10);
	diag_rank *k = &job.ranks[0];
	k->pre = realloc(k->pre, 2 * sizeof *k->pre);
	k->pre[1] = (diag_phase){PP_IMPORT, "big_dataset_module", 700 * MS};
	k->n_pre = 2;
	k->init_start += 700 * MS;
	job.ranks[1].init_end = k->init_start + 100 * MS;
	k->init_end = k->init_start + 100 * MS;
	check();
	f = find("rank_init_skew");
	assert_non_null(f);
	assert_string_not_equal(f->severity, "info");
}

static void test_first_collective_skew(void **state)
{
	(void)state;
	make_job(4, 10);
	diag_rank *k = &job.ranks[1];
	k->pre_coll = calloc(1, sizeof *k->pre_coll);
	k->pre_coll[0] = (diag_phase){PP_DATA_WAIT, "build dataset index", 3 * S};
	k->n_pre_coll = 1;
	k->coll_start += 3 * S;
	for (int i = 0; i < job.n; i++)
		job.ranks[i].end_ns += 3 * S;
	check();
	assert_null(find("rank_init_skew"));
	const pp_finding *f = find("rank_first_collective_skew");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 1 reached MPI_Barrier 3.00 s"));
	assert_non_null(strstr(f->evidence, "data_wait 'build dataset index'"));
}

static void test_straggler(void **state)
{
	(void)state;
	make_job(4, 20);
	for (int i = 0; i < job.n; i++)
		for (int s = 0; s < 20; s++) {
			diag_rank *k = &job.ranks[i];
			if (i == 3) {
				k->step_comm_ns[s] = 1 * MS;
				k->step_ns[s] = 180 * MS; /* twice the others' compute */
			} else {
				k->step_comm_ns[s] = 91 * MS;
				k->step_ns[s] = 181 * MS;
			}
		}
	check();
	const pp_finding *f = find("rank_straggler");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 3 is a straggler: 89.0 ms more compute per step"));
	assert_non_null(strstr(f->evidence, "slowest in 19 of 19 steps"));
	assert_string_equal(f->severity, "high");
	/* the others' communication is the straggler's wait, not a finding of its own */
	assert_null(find("rank_comm_share"));
}

/* A rank computing longer while nobody is seen waiting for it (DDP's
 * allreduce is inside backward, not in a comm phase): not a straggler. */
static void test_slower_rank_without_wait_quiet(void **state)
{
	(void)state;
	make_job(2, 8);
	for (int s = 0; s < 8; s++) {
		job.ranks[0].step_ns[s] = 5 * MS;
		job.ranks[1].step_ns[s] = 3 * MS;
		job.ranks[0].step_comm_ns[s] = job.ranks[1].step_comm_ns[s] = 0;
	}
	check();
	assert_null(find("rank_straggler"));
}

static void test_comm_share(void **state)
{
	(void)state;
	make_job(4, 20);
	for (int i = 0; i < job.n; i++)
		for (int s = 0; s < 20; s++)
			job.ranks[i].step_comm_ns[s] = 60 * MS;
	check();
	const pp_finding *f = find("rank_comm_share");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Communication takes 60% of every step"));
	assert_string_equal(f->severity, "high");
	assert_null(find("rank_straggler"));
}

static void test_slow_comm_init(void **state)
{
	(void)state;
	make_job(4, 10);
	for (int i = 0; i < job.n; i++) {
		job.ranks[i].init_end = job.ranks[i].init_start + 8 * S;
		job.ranks[i].coll_start += 8 * S;
		job.ranks[i].end_ns += 8 * S;
	}
	check();
	const pp_finding *f = find("rank_slow_comm_init");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "MPI_Init"));
	assert_non_null(strstr(f->title, "8.00 s"));
}

static void test_failed_rank(void **state)
{
	(void)state;
	make_job(4, 10);
	snprintf(job.ranks[1].status, sizeof job.ranks[1].status, "crashed");
	job.ranks[1].term_signal = 11;
	job.ranks[1].end_ns -= 500 * MS;
	snprintf(job.ranks[1].open_phase, sizeof job.ranks[1].open_phase, "forward 'compute'");
	job.ranks[1].open_step = 5;
	for (int i = 0; i < job.n; i++)
		if (i != 1) {
			snprintf(job.ranks[i].status, sizeof job.ranks[i].status, "killed");
			job.ranks[i].term_signal = 15;
		}
	check();
	const pp_finding *f = find("rank_failed");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 1 crashed by a signal in step 5 (forward 'compute')"));
	assert_non_null(strstr(f->evidence, "4 of 4 ranks did not complete"));
}

static void test_cut_rank(void **state)
{
	(void)state;
	make_job(4, 10);
	snprintf(job.ranks[3].status, sizeof job.ranks[3].status, "truncated");
	job.ranks[3].end_ns -= 300 * MS;
	snprintf(job.ranks[3].open_phase, sizeof job.ranks[3].open_phase, "step");
	job.ranks[3].open_step = 7;
	check();
	const pp_finding *f = find("rank_failed");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 3 stopped abruptly"));
	assert_non_null(strstr(f->title, "last seen in step 7"));
	assert_non_null(strstr(f->evidence, "1 of 4 ranks did not complete"));
}

/* ---- sync points beyond MPI_Init and the first collective ---- */

static void add_sync(diag_rank *k, const char *name, int kind, int first, int64_t start, int64_t end)
{
	k->sync = realloc(k->sync, (size_t)(k->n_sync + 1) * sizeof *k->sync);
	diag_sync *y = &k->sync[k->n_sync];
	memset(y, 0, sizeof *y);
	snprintf(y->name, sizeof y->name, "%s", name);
	y->kind = kind;
	y->first = first;
	y->start = start;
	y->end = end;
	y->from = k->n_sync ? k->sync[k->n_sync - 1].end : 0;
	for (int q = 0; q < k->n_sync; q++)
		if (strcmp(k->sync[q].name, name) == 0)
			y->ord++;
	k->n_sync++;
}

/* A sub-second MPI job (issue 23): rank 2 spends 400 ms between MPI_Init and
 * its first MPI_Allreduce; 12 steps of 30 ms. Judged against the job. */
static void test_sub_second_first_collective(void **state)
{
	(void)state;
	make_job(4, 12);
	for (int i = 0; i < job.n; i++) {
		diag_rank *k = &job.ranks[i];
		k->init_start = 50 * MS - i * 5 * MS;
		k->init_end = k->init_start + 100 * MS;
		k->coll_start = k->init_end + (i == 2 ? 400 * MS : 2 * MS);
		k->coll_end = job.ranks[0].origin_ns - k->origin_ns + 550 * MS;
		for (int s = 0; s < 12; s++) {
			k->step_ns[s] = 30 * MS;
			k->step_comm_ns[s] = 2 * MS;
		}
		k->end_ns = k->coll_end + 12 * 30 * MS;
		if (i == 2) {
			k->pre_coll = calloc(1, sizeof *k->pre_coll);
			k->pre_coll[0] = (diag_phase){PP_DATA_WAIT, "build index", 398 * MS};
			k->n_pre_coll = 1;
		}
	}
	check();
	assert_null(find("rank_init_skew"));
	const pp_finding *f = find("rank_first_collective_skew");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 2 reached MPI_Barrier 398 ms after the other ranks"));
	assert_non_null(strstr(f->evidence, "data_wait 'build index'"));
	assert_non_null(strstr(f->evidence, "waited 1.19 s in total"));
	/* the old floors (0.25 s late AND 0.5 s of its own) kept this quiet */
}

/* The same job with launch-jitter-sized lateness: quiet */
static void test_sub_second_jitter_quiet(void **state)
{
	(void)state;
	make_job(4, 12);
	for (int i = 0; i < job.n; i++) {
		diag_rank *k = &job.ranks[i];
		k->init_start = 50 * MS - i * 5 * MS + (i == 1 ? 90 * MS : 0);
		k->init_end = job.ranks[0].origin_ns - k->origin_ns + 200 * MS;
		k->coll_start = k->init_end + (i == 3 ? 100 * MS : 2 * MS);
		k->coll_end = job.ranks[0].origin_ns - k->origin_ns + 350 * MS;
		for (int s = 0; s < 12; s++) {
			k->step_ns[s] = 30 * MS;
			k->step_comm_ns[s] = 2 * MS;
		}
		k->end_ns = k->coll_end + 12 * 30 * MS;
	}
	check();
	assert_int_equal(ctx.n, 0);
}

/* torch.distributed: rank 1 sets up 600 ms longer after init_process_group;
 * rank 0 waits in DistributedDataParallel.__init__ (its broadcast) */
static void test_ddp_construction_skew(void **state)
{
	(void)state;
	make_job(2, 8);
	for (int i = 0; i < 2; i++) {
		diag_rank *k = &job.ranks[i];
		int64_t base = job.ranks[0].origin_ns - k->origin_ns; /* rank 0's clock */
		add_sync(k, "init_process_group", PP_COMM_INIT, 0, base + 2 * S, base + 2100 * MS);
		int64_t ddp = base + 2100 * MS + (i == 1 ? 600 * MS : 5 * MS);
		add_sync(k, "DistributedDataParallel.__init__", PP_COMM_INIT, 0, ddp, base + 2710 * MS);
		k->sync[1].pre = calloc(1, sizeof *k->sync[1].pre);
		k->sync[1].pre[0] = (diag_phase){PP_MODEL_BUILD, "Sequential", i == 1 ? 590 * MS : 4 * MS};
		k->sync[1].n_pre = 1;
		for (int s = 0; s < 8; s++) {
			k->step_ns[s] = 5 * MS;
			k->step_comm_ns[s] = 0;
		}
		k->end_ns = base + 2800 * MS;
	}
	check();
	const pp_finding *f = find("rank_init_skew");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 1 reached DistributedDataParallel.__init__ 595 ms after the other ranks"));
	assert_non_null(strstr(f->evidence, "model_build 'Sequential'"));
	assert_non_null(strstr(f->evidence, "waited 595 ms in total"));
	assert_null(find("rank_first_collective_skew"));
}

/* A checkpoint barrier after the steps: rank 0 saves 2 s, the others wait */
static void test_checkpoint_barrier(void **state)
{
	(void)state;
	make_job(4, 20);
	for (int i = 0; i < job.n; i++) {
		diag_rank *k = &job.ranks[i];
		int64_t base = job.ranks[0].origin_ns - k->origin_ns;
		add_sync(k, "MPI_Init", PP_COMM_INIT, 0, base + 300 * MS, base + 1800 * MS);
		add_sync(k, "MPI_Barrier", PP_COMM, 1, base + 1801 * MS, base + 1802 * MS);
		int64_t at = base + 3900 * MS + (i == 0 ? 2 * S : 0);
		add_sync(k, "MPI_Barrier", PP_COMM, 0, at, base + 5901 * MS);
		k->sync[2].pre = calloc(1, sizeof *k->sync[2].pre);
		k->sync[2].pre[0] = (diag_phase){PP_SPAN, "save checkpoint", i == 0 ? 2 * S : 0};
		k->sync[2].n_pre = 1;
		k->end_ns = base + 6 * S;
	}
	check();
	const pp_finding *f = find("rank_barrier_skew");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 0 reached MPI_Barrier 2.00 s after the other ranks"));
	assert_non_null(strstr(f->evidence, "span 'save checkpoint'"));
	assert_non_null(strstr(f->evidence, "waited 6.00 s in total"));
	assert_null(find("rank_init_skew"));
	assert_null(find("rank_first_collective_skew"));
}

/* DDP: the gradient allreduce waits inside backward; rank 1's steps take
 * 150 ms more before forward, rank 0's backward holds the wait */
static void test_ddp_straggler(void **state)
{
	(void)state;
	make_job(2, 10);
	torch_run = 1;
	for (int i = 0; i < 2; i++) {
		diag_rank *k = &job.ranks[i];
		k->step_sync_ns = calloc(10, sizeof *k->step_sync_ns);
		for (int s = 0; s < 10; s++) {
			k->step_comm_ns[s] = 0;
			k->step_sync_ns[s] = i == 0 ? 155 * MS : 5 * MS; /* backward */
			k->step_ns[s] = 180 * MS;
		}
	}
	check();
	const pp_finding *f = find("rank_straggler");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 1 is a straggler: 150 ms more compute per step"));
	assert_non_null(strstr(f->evidence, "wait a median 150 ms per step"));
	assert_non_null(strstr(f->evidence, "1.35 s in total"));
}

/* Two torch ranks importing side by side on a loaded host: 20 s to
 * init_process_group, one 650 ms longer (3%); 30 ms steps. Noise: quiet. */
static void test_import_jitter_quiet(void **state)
{
	(void)state;
	make_job(2, 10);
	for (int i = 0; i < 2; i++) {
		diag_rank *k = &job.ranks[i];
		int64_t base = job.ranks[0].origin_ns - k->origin_ns;
		int64_t at = base + 20 * S + (i == 0 ? 650 * MS : 0);
		add_sync(k, "init_process_group", PP_COMM_INIT, 0, at, base + 20700 * MS);
		add_sync(k, "DistributedDataParallel.__init__", PP_COMM_INIT, 0, base + 20710 * MS, base + 20800 * MS);
		for (int s = 0; s < 10; s++) {
			k->step_ns[s] = 30 * MS;
			k->step_comm_ns[s] = 0;
		}
		k->end_ns = base + 21200 * MS;
	}
	check();
	assert_int_equal(ctx.n, 0);
}

/* A rank that ends with an error exit code (os._exit(3), sys.exit(1)) is
 * the job's failure, not a completed rank; the other, stopped by the
 * launcher afterwards, is not named first */
static void test_exit_code_rank(void **state)
{
	(void)state;
	make_job(2, 10);
	job.ranks[1].exit_code = 3;
	job.ranks[1].end_ns -= 800 * MS;
	snprintf(job.ranks[1].open_phase, sizeof job.ranks[1].open_phase, "step");
	job.ranks[1].open_step = 3;
	snprintf(job.ranks[0].status, sizeof job.ranks[0].status, "killed");
	job.ranks[0].term_signal = 15;
	job.ranks[0].exit_code = -1;
	check();
	const pp_finding *f = find("rank_failed");
	assert_non_null(f);
	assert_non_null(strstr(f->title, "Rank 1 exited with code 3 in step 3"));
	assert_non_null(strstr(f->evidence, "2 of 2 ranks did not complete; rank 0 killed"));
}

/* 4 ranks on 2 starved CPUs: in every step one rank (a different one each
 * time) is descheduled and the others wait 25 ms for it in the allreduce,
 * whose own cost is 2 ms. Waiting is not communication cost: quiet. */
static void test_starved_balanced_quiet(void **state)
{
	(void)state;
	make_job(4, 20);
	for (int i = 0; i < job.n; i++)
		for (int s = 0; s < 20; s++) {
			job.ranks[i].step_comm_ns[s] = s % 4 == i ? 2 * MS : 27 * MS;
			job.ranks[i].step_ns[s] = 57 * MS;
		}
	check();
	assert_int_equal(ctx.n, 0);
}

/* 2 ranks, 5 steady steps: rank 1 computes 10 ms more in 4 of them and
 * rank 0 waits. With 2 ranks each is the slowest half the time by chance:
 * 4 of 5 is not evidence of a straggler (a balanced torch 2 job on 2
 * loaded CPUs looked like this) */
static void test_few_steps_straggler_quiet(void **state)
{
	(void)state;
	make_job(2, 6);
	for (int s = 0; s < 6; s++) {
		int slow = s != 4;
		job.ranks[1].step_comm_ns[s] = 1 * MS;
		job.ranks[1].step_ns[s] = (slow ? 33 : 23) * MS;
		job.ranks[0].step_comm_ns[s] = (slow ? 11 : 1) * MS;
		job.ranks[0].step_ns[s] = 33 * MS;
		if (!slow) {
			job.ranks[0].step_ns[s] = 33 * MS;
			job.ranks[0].step_comm_ns[s] = 1 * MS;
		}
	}
	check();
	assert_null(find("rank_straggler"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_balanced_quiet, teardown),
		cmocka_unit_test_teardown(test_noisy_balanced_quiet, teardown),
		cmocka_unit_test_teardown(test_launch_stagger_quiet, teardown),
		cmocka_unit_test_teardown(test_init_skew_names_rank_and_phase, teardown),
		cmocka_unit_test_teardown(test_init_skew_shared_import_info, teardown),
		cmocka_unit_test_teardown(test_first_collective_skew, teardown),
		cmocka_unit_test_teardown(test_straggler, teardown),
		cmocka_unit_test_teardown(test_slower_rank_without_wait_quiet, teardown),
		cmocka_unit_test_teardown(test_comm_share, teardown),
		cmocka_unit_test_teardown(test_slow_comm_init, teardown),
		cmocka_unit_test_teardown(test_failed_rank, teardown),
		cmocka_unit_test_teardown(test_cut_rank, teardown),
		cmocka_unit_test_teardown(test_sub_second_first_collective, teardown),
		cmocka_unit_test_teardown(test_sub_second_jitter_quiet, teardown),
		cmocka_unit_test_teardown(test_ddp_construction_skew, teardown),
		cmocka_unit_test_teardown(test_checkpoint_barrier, teardown),
		cmocka_unit_test_teardown(test_ddp_straggler, teardown),
		cmocka_unit_test_teardown(test_import_jitter_quiet, teardown),
		cmocka_unit_test_teardown(test_exit_code_rank, teardown),
		cmocka_unit_test_teardown(test_starved_balanced_quiet, teardown),
		cmocka_unit_test_teardown(test_few_steps_straggler_quiet, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
