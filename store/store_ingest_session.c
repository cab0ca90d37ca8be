/* ingest_session.c — the spools of one recording session into linked runs
 * (store.h: pp_store_ingest_session). */
#include "store.h"
#include "spool_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct item {
	pp_ingest_spool *s;
	pp_spool_summary sum;
	int readable;
} item;

static int cmp_item(const void *a, const void *b)
{
	const item *x = a, *y = b;
	if (x->readable != y->readable)
		return x->readable ? -1 : 1;
	if (x->sum.start_mono_ns != y->sum.start_mono_ns)
		return x->sum.start_mono_ns < y->sum.start_mono_ns ? -1 : 1;
	return strcmp(x->s->path, y->s->path);
}

int pp_store_ingest_session(pp_store *st, pp_ingest_spool *spools, int n, const pp_ingest_session_opts *o)
{
	pp_ingest_session_opts d = {0, -1, 0, 0, NULL, NULL, 0};
	if (!o)
		o = &d;
	item *it = calloc(n > 0 ? (size_t)n : 1, sizeof *it);
	pp_ingest_spool *sorted = malloc((n > 0 ? (size_t)n : 1) * sizeof *sorted);
	if (!it || !sorted) {
		free(it);
		free(sorted);
		for (int i = 0; i < n; i++)
			snprintf(spools[i].err, sizeof spools[i].err, "%s: out of memory", spools[i].path);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (!spools[i].ingested) {
			spools[i].run_id = 0;
			spools[i].err[0] = 0;
		}
		spools[i].is_top = spools[i].is_last_top = 0;
		it[i].s = &spools[i];
		it[i].readable = pp_spool_summarise(spools[i].path, &it[i].sum, spools[i].err,
						    sizeof spools[i].err) == 0;
	}
	qsort(it, (size_t)n, sizeof *it, cmp_item);
	int done = 0;
	for (int i = 0; i < n; i++) {
		if (!it[i].readable)
			continue;
		pp_ingest_spool *s = it[i].s;
		const pp_spool_summary *m = &it[i].sum;
		pp_ingest_opts io = {0};
		io.exit_code = -1;
		io.keep_all_spans = o->keep_all_spans;
		io.refuse_stored = o->refuse_stored;
		io.progress = o->progress;
		io.progress_ud = o->progress_ud;
		/* parent: the previous image of the same pid (exec), else the
		 * latest image of the parent pid that started before (fork) */
		for (int p = i - 1; p >= 0 && !io.parent_run; p--)
			if (it[p].sum.pid == m->pid && it[p].s->run_id)
				io.parent_run = it[p].s->run_id;
		for (int p = i - 1; p >= 0 && !io.parent_run; p--)
			if (it[p].sum.pid == m->ppid && it[p].s->run_id)
				io.parent_run = it[p].s->run_id;
		s->is_top = o->top_pid && m->pid == o->top_pid;
		s->is_last_top = s->is_top;
		for (int p = i + 1; p < n && s->is_last_top; p++)
			if (it[p].readable && it[p].sum.pid == o->top_pid)
				s->is_last_top = 0;
		if (s->ingested) {
			/* ingested while the program exited: with the spool's own
			 * account, which its parent's wait overrules */
			if (!s->run_id)
				continue;
			done++;
			if (s->is_last_top && (o->exit_code != m->exit_code || o->term_signal != m->exit_signal))
				(void)pp_store_run_set_exit(st, s->run_id, o->exit_code, o->term_signal, s->err,
							    sizeof s->err); /* err: the run stays, misreported */
			continue;
		}
		if (s->is_last_top) {
			io.exit_code = o->exit_code;
			io.term_signal = o->term_signal;
		} else if (m->exit_signal) {
			io.term_signal = m->exit_signal;
		} else if (m->exit_code >= 0) {
			io.exit_code = m->exit_code;
		}
		if (pp_store_ingest(st, s->path, &io, &s->res, s->err, sizeof s->err) == 0) {
			s->run_id = s->res.run_id;
			done++;
		}
	}
	/* hand the slots back in session order */
	for (int i = 0; i < n; i++)
		sorted[i] = *it[i].s;
	memcpy(spools, sorted, (size_t)n * sizeof *spools);
	free(sorted);
	free(it);
	return done;
}
