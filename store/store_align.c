/*
 * store_align.c — the clocks of a distributed job's ranks, aligned on the
 * collectives they share (merge). Machines' wall clocks disagree; every
 * rank's times are relative to its own start, placed by
 * runs.start_unix_ns. The bound each shared collective gives is exact as
 * long as the calls matched are the same collective on every rank: the
 * offset stored is the middle of the interval, the uncertainty a bound,
 * not a statistical guess.
 */
#include "store.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Offset of rank r's clock to the reference's, from their shared events. */
static pp_rank_align estimate(const pp_sync_event *ref, int nref, int64_t ref_start, const pp_sync_event *r,
			      int nr, int64_t r_start)
{
	pp_rank_align a = {0, -1, 0, 1, ""};
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	for (int k = 0; k < nref && k < nr; k++) {
		if (strcmp(ref[k].name, r[k].name) != 0)
			break; /* the sequences diverge (a rank crashed, or another call order) */
		int64_t l = (ref_start + ref[k].start_ns) - (r_start + r[k].end_ns);
		int64_t h = (ref_start + ref[k].end_ns) - (r_start + r[k].start_ns);
		if (l > lo)
			lo = l;
		if (h < hi)
			hi = h;
		a.events++;
	}
	if (!a.events)
		return a;
	a.offset_ns = lo / 2 + hi / 2 + ((lo % 2 + hi % 2) / 2);
	a.uncertainty_ns = hi >= lo ? (hi - lo) / 2 : (lo - hi) / 2;
	a.consistent = hi >= lo;
	return a;
}

int pp_store_align_ranks(pp_store *st, const pp_rank_run *ranks, int n, pp_rank_align *out)
{
	pp_sync_event *ref = NULL;
	int nref = 0, done = 0;
	if (pp_store_sync_events(st, ranks[0].run_id, &ref, &nref) != 0)
		return -1;
	for (int i = 0; i < n; i++) {
		const pp_rank_run *r = &ranks[i];
		pp_rank_align a = {0, 0, nref, 1, ""};
		if (i > 0) {
			pp_sync_event *ev = NULL;
			int nev = 0;
			if (pp_store_sync_events(st, r->run_id, &ev, &nev) != 0)
				break;
			a = estimate(ref, nref, ranks[0].start_unix_ns, ev, nev, r->start_unix_ns);
			free(ev);
		}
		if (i == 0)
			snprintf(a.how, sizeof a.how, "reference");
		else if (!a.events)
			snprintf(a.how, sizeof a.how, "nothing shared: wall clock as recorded");
		else
			snprintf(a.how, sizeof a.how, "%d collective%s%s", a.events, a.events == 1 ? "" : "s",
				 a.consistent ? "" : " (bounds disagree: calls not matched one to one)");
		if (pp_store_set_clock_offset(st, r->run_id, a.offset_ns, i == 0 ? 0 : a.uncertainty_ns, a.how) != 0)
			break;
		out[i] = a;
		done++;
	}
	free(ref);
	return done;
}
