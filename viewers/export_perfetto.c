/* export_perfetto.c — Perfetto's native protobuf trace (what
 * trace_processor and ui.perfetto.dev read directly), written by hand and
 * streamed: a run's spans come one row at a time (pp_store_each_span) and
 * go out as they are read, so memory holds the names, the threads and each
 * thread's open spans, never the run.
 *
 * The encoding (protos/perfetto/trace/ in Perfetto's tree; field numbers):
 *   Trace          { repeated TracePacket packet = 1; }
 *   TracePacket    { uint64 timestamp = 8; uint32 trusted_packet_sequence_id = 10;
 *                    TrackEvent track_event = 11; InternedData interned_data = 12;
 *                    uint32 sequence_flags = 13; TrackDescriptor track_descriptor = 60; }
 *   TrackDescriptor{ uint64 uuid = 1; string name = 2; ProcessDescriptor process = 3;
 *                    ThreadDescriptor thread = 4; uint64 parent_uuid = 5;
 *                    CounterDescriptor counter = 8 (empty: a plain counter track); }
 *   ProcessDescriptor { int32 pid = 1; string process_name = 6; }
 *   ThreadDescriptor  { int32 pid = 1; int32 tid = 2; string thread_name = 5; }
 *   TrackEvent     { repeated uint64 category_iids = 3; Type type = 9 (SLICE_BEGIN 1,
 *                    SLICE_END 2, INSTANT 3, COUNTER 4); uint64 name_iid = 10;
 *                    uint64 track_uuid = 11; double double_counter_value = 44; }
 *   InternedData   { repeated EventCategory event_categories = 1;
 *                    repeated EventName event_names = 2; }  (both { uint64 iid = 1; string name = 2; })
 * sequence_flags: 1 SEQ_INCREMENTAL_STATE_CLEARED (first packet), 2
 * SEQ_NEEDS_INCREMENTAL_STATE (every event: its names are interned).
 *
 * What goes out: per run a process track (pid = run id, as the Chrome
 * export's), per thread a thread track (tid = the OS tid) with every kept
 * span as a SLICE_BEGIN / SLICE_END pair (category = the span's kind), marks
 * as instants on the process track, counters on counter tracks. Timestamps
 * are the run's wall-clock start plus the span's offset, in ns (ranks of a
 * merged job line up). A span that overlaps a sibling without nesting
 * (Perfetto's slices must nest on a track) goes to an overflow lane, a child
 * track of its thread; a span still open at the run's end ends there. Ops,
 * GPU activity and CPU samples are in the Chrome export only.
 */
#include "view_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- encoding */

typedef struct pb { unsigned char *b; size_t n, cap; int oom; } pb;

static void pb_bytes(pb *p, const void *v, size_t n)
{
	if (p->oom)
		return;
	if (p->n + n > p->cap) {
		size_t cap = p->cap ? p->cap : 256;
		while (cap < p->n + n)
			cap *= 2;
		unsigned char *b = realloc(p->b, cap);
		if (!b) {
			p->oom = 1;
			return;
		}
		p->b = b;
		p->cap = cap;
	}
	memcpy(p->b + p->n, v, n);
	p->n += n;
}

static void pb_varint(pb *p, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;
	do {
		t[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	pb_bytes(p, t, n);
}

static void pb_uint(pb *p, unsigned field, uint64_t v)
{
	pb_varint(p, (uint64_t)field << 3);
	pb_varint(p, v);
}

/* int32 fields (pid, tid) are varints of the sign-extended value */
static void pb_int32(pb *p, unsigned field, int64_t v) { pb_uint(p, field, (uint64_t)(int64_t)(int32_t)v); }

static void pb_len(pb *p, unsigned field, const void *v, size_t n)
{
	pb_varint(p, (uint64_t)field << 3 | 2);
	pb_varint(p, n);
	pb_bytes(p, v, n);
}

static void pb_str(pb *p, unsigned field, const char *s) { pb_len(p, field, s, strlen(s)); }

static void pb_double(pb *p, unsigned field, double d)
{
	unsigned char t[8];
	uint64_t u;
	memcpy(&u, &d, 8);
	for (int i = 0; i < 8; i++)
		t[i] = (unsigned char)(u >> (8 * i));
	pb_varint(p, (uint64_t)field << 3 | 1);
	pb_bytes(p, t, 8);
}

/* a nested message: sub's bytes under field, sub emptied */
static void pb_msg(pb *p, unsigned field, pb *sub)
{
	if (sub->oom)
		p->oom = 1;
	pb_len(p, field, sub->b, sub->n);
	sub->n = 0;
}

/* ---------------------------------------------------------------- state */

typedef struct lane {
	uint64_t uuid;
	int64_t *ends;            /* open spans, innermost last (ends never rise) */
	int depth, cap;
	int64_t last_start;
} lane;

typedef struct pthread_st {
	int64_t tid;
	char name[64];
	lane *lanes;
	int n_lanes, cap_lanes;
} pthread_st;

typedef struct pf_state {
	pb pkt, ev, sub, sub2;    /* the packet being built and its nested messages */
	pp_strtab names;          /* event name iid = index + 1 */
	pp_strtab counters;       /* counter track of a run: uuid via ctr_uuid */
	uint64_t *ctr_uuid;
	uint64_t kinds_sent;      /* category iids already interned (kind + 1) */
	uint64_t next_uuid;
	int first;
	/* the run being written */
	pp_view_ctx *c;
	int64_t run_id, origin, run_end;
	uint64_t proc_uuid;
	pthread_st *threads;
	int n_threads, cap_threads, last_thread;
	pp_thread_row *trows;
	int n_trows;
	int failed;
} pf_state;

/* Emits the packet in s->pkt as one Trace.packet. */
static int pf_flush(pf_state *s)
{
	if (s->pkt.oom || s->ev.oom || s->sub.oom || s->sub2.oom) {
		s->failed = 1;
		return -1;
	}
	unsigned char t[11];
	size_t n = 0;
	t[n++] = 1 << 3 | 2;
	uint64_t v = s->pkt.n;
	do {
		t[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	pp_out_write(s->c->out, t, n);
	pp_out_write(s->c->out, s->pkt.b, s->pkt.n);
	s->pkt.n = 0;
	return 0;
}

/* Packet header: sequence 1; the very first packet clears its state. */
static void pf_seq(pf_state *s, int needs_state)
{
	pb_uint(&s->pkt, 10, 1);
	if (s->first) {
		pb_uint(&s->pkt, 13, 1);
		s->first = 0;
	} else if (needs_state) {
		pb_uint(&s->pkt, 13, 2);
	}
}

static int pf_track(pf_state *s, uint64_t uuid, uint64_t parent, const char *name, int64_t pid, int64_t tid,
		    int counter)
{
	pf_seq(s, 0);
	pb_uint(&s->ev, 1, uuid);
	if (parent)
		pb_uint(&s->ev, 5, parent);
	if (tid >= 0) {
		pb_int32(&s->sub, 1, pid);
		pb_int32(&s->sub, 2, tid);
		if (name && name[0])
			pb_str(&s->sub, 5, name);
		pb_msg(&s->ev, 4, &s->sub);
	} else if (pid >= 0) {
		pb_int32(&s->sub, 1, pid);
		pb_str(&s->sub, 6, name);
		pb_msg(&s->ev, 3, &s->sub);
	} else {
		pb_str(&s->ev, 2, name);
		if (counter)
			pb_msg(&s->ev, 8, &s->sub);
	}
	pb_msg(&s->pkt, 60, &s->ev);
	return pf_flush(s);
}

/* An event packet on track uuid at ts: type, and for BEGIN/INSTANT the
 * name (interned here on first use) and the kind's category. */
static int pf_event(pf_state *s, int64_t ts, uint64_t track, int type, const char *name, int kind)
{
	pf_seq(s, 1);
	pb_uint(&s->pkt, 8, (uint64_t)ts);
	uint64_t iid = 0;
	if (name) {
		int before = s->names.n;
		int i = pp_strtab_add(&s->names, name);
		if (i < 0) {
			s->failed = 1;
			return -1;
		}
		iid = (uint64_t)i + 1;
		if (s->names.n != before) {
			pb_uint(&s->sub2, 1, iid);
			pb_str(&s->sub2, 2, name);
			pb_msg(&s->sub, 2, &s->sub2);
		}
		if (kind >= 0 && kind < 63 && !(s->kinds_sent & (1ull << kind))) {
			s->kinds_sent |= 1ull << kind;
			pb_uint(&s->sub2, 1, (uint64_t)kind + 1);
			pb_str(&s->sub2, 2, pp_kind_name((pp_kind)kind));
			pb_msg(&s->sub, 1, &s->sub2);
		}
		if (s->sub.n)
			pb_msg(&s->pkt, 12, &s->sub);
	}
	if (kind >= 0 && kind < 63)
		pb_uint(&s->ev, 3, (uint64_t)kind + 1);
	pb_uint(&s->ev, 9, (uint64_t)type);
	if (iid)
		pb_uint(&s->ev, 10, iid);
	pb_uint(&s->ev, 11, track);
	pb_msg(&s->pkt, 11, &s->ev);
	return pf_flush(s);
}

/* Ends every open span of a lane that ends by t (all of them: INT64_MAX). */
static int lane_pop(pf_state *s, lane *l, int64_t t)
{
	while (l->depth && l->ends[l->depth - 1] <= t) {
		if (pf_event(s, l->ends[l->depth - 1], l->uuid, 2, NULL, -1) != 0)
			return -1;
		l->depth--;
	}
	return 0;
}

static pthread_st *thread_get(pf_state *s, int64_t tid)
{
	if (s->last_thread >= 0 && s->threads[s->last_thread].tid == tid)
		return &s->threads[s->last_thread];
	for (int i = 0; i < s->n_threads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[s->last_thread = i];
	if (PP_GROW(s->threads, s->n_threads + 1, s->cap_threads) != 0)
		return NULL;
	pthread_st *t = &s->threads[s->n_threads];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	snprintf(t->name, sizeof t->name, "thread %lld", (long long)tid);
	for (int i = 0; i < s->n_trows; i++)
		if (s->trows[i].tid == tid && s->trows[i].name[0])
			snprintf(t->name, sizeof t->name, "%s", s->trows[i].name);
	s->last_thread = s->n_threads++;
	return t;
}

static lane *lane_new(pf_state *s, pthread_st *t)
{
	if (PP_GROW(t->lanes, t->n_lanes + 1, t->cap_lanes) != 0)
		return NULL;
	lane *l = &t->lanes[t->n_lanes];
	memset(l, 0, sizeof *l);
	l->uuid = s->next_uuid++;
	l->last_start = INT64_MIN;
	int rc;
	if (t->n_lanes == 0) {
		rc = pf_track(s, l->uuid, s->proc_uuid, t->name, s->run_id, t->tid, 0);
	} else {
		char nm[96];
		snprintf(nm, sizeof nm, "%s (overlap %d)", t->name, t->n_lanes);
		rc = pf_track(s, l->uuid, t->lanes[0].uuid, nm, -1, -1, 0);
	}
	if (rc != 0)
		return NULL;
	t->n_lanes++;
	return l;
}

static int span_out(const pp_span_row *r, void *ud)
{
	pf_state *s = ud;
	pthread_st *t = thread_get(s, r->tid);
	if (!t)
		goto oom;
	int64_t start = r->start_ns, end = r->end_ns < 0 ? s->run_end : r->end_ns;
	if (end < start)
		end = start;
	start += s->origin;
	end += s->origin;
	/* the first lane where it nests: its spans ending by now closed,
	 * then the innermost still open must enclose it */
	lane *l = NULL;
	for (int i = 0; i < t->n_lanes && !l; i++) {
		lane *c = &t->lanes[i];
		if (lane_pop(s, c, start) != 0)
			return 1;
		if (start >= c->last_start && (!c->depth || c->ends[c->depth - 1] >= end))
			l = c;
	}
	if (!l && !(l = lane_new(s, t)))
		goto oom;
	if (PP_GROW(l->ends, l->depth + 1, l->cap) != 0)
		goto oom;
	l->ends[l->depth++] = end;
	l->last_start = start;
	return pf_event(s, start, l->uuid, 1, r->name, r->kind) != 0;
oom:
	s->failed = 1;
	return 1;
}

static int mark_out(const pp_mark_row *r, void *ud)
{
	pf_state *s = ud;
	return pf_event(s, r->ts_ns + s->origin, s->proc_uuid, 3, r->name, -1) != 0;
}

static int counter_out(const pp_counter_sample *r, void *ud)
{
	pf_state *s = ud;
	int before = s->counters.n;
	int i = pp_strtab_add(&s->counters, r->name);
	if (i < 0)
		goto oom;
	if (s->counters.n != before) {
		uint64_t *u = realloc(s->ctr_uuid, (size_t)s->counters.n * sizeof *u);
		if (!u)
			goto oom;
		s->ctr_uuid = u;
		u[i] = s->next_uuid++;
		if (pf_track(s, u[i], s->proc_uuid, r->name, -1, -1, 1) != 0)
			return 1;
	}
	if (r->value != r->value)
		return 0; /* NULL value: no sample to draw */
	pf_seq(s, 1);
	pb_uint(&s->pkt, 8, (uint64_t)(r->ts_ns + s->origin));
	pb_uint(&s->ev, 9, 4);
	pb_uint(&s->ev, 11, s->ctr_uuid[i]);
	pb_double(&s->ev, 44, r->value);
	pb_msg(&s->pkt, 11, &s->ev);
	return pf_flush(s) != 0;
oom:
	s->failed = 1;
	return 1;
}

static void run_free(pf_state *s)
{
	for (int i = 0; i < s->n_threads; i++) {
		for (int k = 0; k < s->threads[i].n_lanes; k++)
			free(s->threads[i].lanes[k].ends);
		free(s->threads[i].lanes);
	}
	free(s->threads);
	s->threads = NULL;
	s->n_threads = s->cap_threads = 0;
	s->last_thread = -1;
	free(s->trows);
	s->trows = NULL;
	s->n_trows = 0;
	pp_strtab_free(&s->counters);
	memset(&s->counters, 0, sizeof s->counters);
	free(s->ctr_uuid);
	s->ctr_uuid = NULL;
}

static int perfetto_begin(pp_view_ctx *c)
{
	pf_state *s = calloc(1, sizeof *s);
	if (!s)
		return pp_view_fail(c, "out of memory");
	s->first = 1;
	s->next_uuid = 1;
	s->last_thread = -1;
	s->c = c;
	c->priv = s;
	return 0;
}

static int perfetto_run(pp_view_ctx *c, const pp_run_info *run)
{
	pf_state *s = c->priv;
	s->run_id = run->id;
	s->origin = run->start_unix_ns;
	s->run_end = run->duration_ns > 0 ? run->duration_ns : 0;
	s->proc_uuid = s->next_uuid++;
	char pname[300];
	pp_rank_run rk;
	if (pp_store_rank_of(c->st, run->id, &rk) == 0)
		snprintf(pname, sizeof pname, "rank %d (run %lld, %.60s)", rk.rank, (long long)run->id, rk.host);
	else if (run->scenario[0])
		snprintf(pname, sizeof pname, "run %lld: %s / %s", (long long)run->id, run->scenario, run->variant);
	else
		snprintf(pname, sizeof pname, "run %lld: %.200s", (long long)run->id,
			 run->label[0] ? run->label : run->command);
	int rc = -1;
	if (pp_store_threads(c->st, run->id, &s->trows, &s->n_trows) != 0) {
		pp_view_fail(c, "%s: cannot read the threads of run %lld", pp_store_path(c->st), (long long)run->id);
		goto out;
	}
	if (pf_track(s, s->proc_uuid, 0, pname, run->id, -1, 0) != 0)
		goto fail;
	if (pp_store_each_span(c->st, run->id, span_out, s) != 0) {
		pp_view_fail(c, "%s: cannot read the spans of run %lld", pp_store_path(c->st), (long long)run->id);
		goto out;
	}
	if (s->failed)
		goto fail;
	for (int i = 0; i < s->n_threads; i++)
		for (int k = 0; k < s->threads[i].n_lanes; k++)
			if (lane_pop(s, &s->threads[i].lanes[k], INT64_MAX) != 0)
				goto fail;
	if (pp_store_each_mark(c->st, run->id, 0, mark_out, s) != 0 ||
	    pp_store_each_counter(c->st, run->id, counter_out, s) != 0) {
		pp_view_fail(c, "%s: cannot read counters/marks of run %lld", pp_store_path(c->st),
			     (long long)run->id);
		goto out;
	}
	if (s->failed)
		goto fail;
	rc = 0;
	goto out;
fail:
	pp_view_fail(c, "out of memory writing the Perfetto trace of run %lld", (long long)run->id);
out:
	run_free(s);
	return rc;
}

static int perfetto_end(pp_view_ctx *c)
{
	pf_state *s = c->priv;
	if (!s)
		return 0;
	run_free(s);
	pp_strtab_free(&s->names);
	free(s->pkt.b);
	free(s->ev.b);
	free(s->sub.b);
	free(s->sub2.b);
	free(s);
	c->priv = NULL;
	return 0;
}

const pp_view_ops pp_backend_perfetto = {
	.name = "perfetto",
	.description = "Perfetto protobuf trace, streamed (ui.perfetto.dev, trace_processor)",
	.begin = perfetto_begin,
	.run = perfetto_run,
	.end = perfetto_end,
};
