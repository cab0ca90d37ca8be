/*
 * pp_mpi.c — libphaseprof-mpi.so, the MPI profiling-interface (PMPI) layer
 * of `phaseprof record`.
 *
 * Preloaded after the agent, it defines the C MPI entry points a program
 * calls, times each one as a phase (PP_COMM_INIT for MPI_Init and
 * communicator set-up, PP_COMM for everything else) through the agent's
 * exported recorder, writes one `comm` row per call (bytes, peer, size of
 * the communicator) and forwards to the MPI library's PMPI_ symbol.
 *
 * The library has no link dependency on libmpi and references no MPI
 * handle constant (in Open MPI those are data symbols that would have to
 * be relocated at load time): PMPI_ functions are looked up with dlsym on
 * first use. A program that never calls MPI is therefore untouched even if
 * this library is preloaded into it (mpirun itself, a shell, python).
 * Built against Open MPI's mpi.h: the MPI ABI is Open MPI's. The Fortran
 * bindings (mpi_init_ etc.) are not wrapped.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "phaseprof.h"
#include "pp_rows.h"

/* From the agent when it is loaded; NULL otherwise (then we only forward). */
#pragma weak pp_begin_site
#pragma weak pp_phase_end
#pragma weak pp_now
#pragma weak pp_row
#pragma weak pp_meta
#pragma weak pp_mark

#define PUB __attribute__((visibility("default")))

static void *resolve(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p)
		p = dlsym(RTLD_DEFAULT, name);
	if (!p) {
		/* cannot forward: an MPI library without its profiling interface */
		char msg[160];
		int n = snprintf(msg, sizeof msg, "phaseprof mpi: %s not found in the MPI library\n", name);
		(void)!write(2, msg, (size_t)n);
		abort();
	}
	return p;
}

/* resolved once; threads racing here store the same pointer */
#define REAL(fn)                                                               \
	({                                                                     \
		__typeof__(&P##fn) f_ = __atomic_load_n(&r_##fn, __ATOMIC_RELAXED); \
		if (!f_) {                                                     \
			f_ = (__typeof__(&P##fn))resolve("P" #fn);             \
			__atomic_store_n(&r_##fn, f_, __ATOMIC_RELAXED);       \
		}                                                              \
		f_;                                                            \
	})
#define DECL(fn) static __typeof__(&P##fn) r_##fn

static int on(void) { return pp_begin_site && pp_phase_end && pp_now && pp_row; }

static __thread int64_t my_tid;
static int64_t tid(void)
{
	if (!my_tid)
		my_tid = (int64_t)syscall(SYS_gettid);
	return my_tid;
}

DECL(MPI_Type_size);
DECL(MPI_Comm_size);
DECL(MPI_Comm_rank);

static int64_t type_bytes(int count, MPI_Datatype t)
{
	int sz = 0;
	if (count <= 0 || REAL(MPI_Type_size)(t, &sz) != MPI_SUCCESS || sz < 0)
		return 0;
	return (int64_t)count * sz;
}

static int64_t comm_size(MPI_Comm c)
{
	int n = 0;
	return REAL(MPI_Comm_size)(c, &n) == MPI_SUCCESS ? n : -1;
}

static int64_t sum_counts(const int *counts, MPI_Comm c)
{
	int64_t n = comm_size(c), s = 0;
	for (int64_t i = 0; counts && i < n; i++)
		s += counts[i];
	return s;
}

/* One call: a phase around it and a `comm` row. */
typedef struct call {
	int rec;
	uint64_t t0;
} call;

static call call_begin(pp_site *site)
{
	call c = {on(), 0};
	if (c.rec) {
		c.t0 = pp_now();
		pp_begin_site(site);
	}
	return c;
}

static void call_end(call c, const char *op, int64_t bytes, int64_t peer, int64_t size)
{
	if (!c.rec)
		return;
	uint64_t t1 = pp_now();
	pp_phase_end();
	pp_row_comm(tid(), op, (int64_t)c.t0, (int64_t)t1, bytes, peer, size);
}

#define SITE(kind, name) static pp_site site_ = {name, kind, 0}

/* ---- set-up ---- */
DECL(MPI_Init);
DECL(MPI_Init_thread);
DECL(MPI_Finalize);
DECL(MPI_Comm_split);
DECL(MPI_Comm_dup);

static void init_meta(void)
{
	if (!pp_meta)
		return;
	/* MPI_COMM_WORLD is the address of ompi_mpi_comm_world in Open MPI */
	void *world = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
	if (!world)
		return;
	int rank = -1, size = -1;
	char v[32];
	if (REAL(MPI_Comm_rank)((MPI_Comm)world, &rank) == MPI_SUCCESS) {
		snprintf(v, sizeof v, "%d", rank);
		pp_meta("mpi.rank", v);
	}
	if (REAL(MPI_Comm_size)((MPI_Comm)world, &size) == MPI_SUCCESS) {
		snprintf(v, sizeof v, "%d", size);
		pp_meta("mpi.world_size", v);
	}
}

PUB int MPI_Init(int *argc, char ***argv)
{
	SITE(PP_COMM_INIT, "MPI_Init");
	call c = call_begin(&site_);
	int r = REAL(MPI_Init)(argc, argv);
	call_end(c, "MPI_Init", 0, -1, -1);
	if (r == MPI_SUCCESS && c.rec)
		init_meta();
	return r;
}

PUB int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	SITE(PP_COMM_INIT, "MPI_Init_thread");
	call c = call_begin(&site_);
	int r = REAL(MPI_Init_thread)(argc, argv, required, provided);
	call_end(c, "MPI_Init_thread", 0, -1, -1);
	if (r == MPI_SUCCESS && c.rec)
		init_meta();
	return r;
}

PUB int MPI_Finalize(void)
{
	SITE(PP_COMM, "MPI_Finalize");
	call c = call_begin(&site_);
	int r = REAL(MPI_Finalize)();
	call_end(c, "MPI_Finalize", 0, -1, -1);
	return r;
}

PUB int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	SITE(PP_COMM_INIT, "MPI_Comm_split");
	call c = call_begin(&site_);
	int r = REAL(MPI_Comm_split)(comm, color, key, newcomm);
	call_end(c, "MPI_Comm_split", 0, -1, c.rec ? comm_size(comm) : -1);
	return r;
}

PUB int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	SITE(PP_COMM_INIT, "MPI_Comm_dup");
	call c = call_begin(&site_);
	int r = REAL(MPI_Comm_dup)(comm, newcomm);
	call_end(c, "MPI_Comm_dup", 0, -1, c.rec ? comm_size(comm) : -1);
	return r;
}

/* ---- collectives: bytes are what this rank contributes ---- */
DECL(MPI_Barrier);
DECL(MPI_Bcast);
DECL(MPI_Reduce);
DECL(MPI_Allreduce);
DECL(MPI_Iallreduce);
DECL(MPI_Allgather);
DECL(MPI_Allgatherv);
DECL(MPI_Alltoall);
DECL(MPI_Alltoallv);
DECL(MPI_Gather);
DECL(MPI_Gatherv);
DECL(MPI_Scatter);
DECL(MPI_Scatterv);
DECL(MPI_Reduce_scatter);
DECL(MPI_Reduce_scatter_block);
DECL(MPI_Scan);

#define COLL(name, call_expr, bytes_expr, comm)                                \
	SITE(PP_COMM, name);                                                   \
	call c = call_begin(&site_);                                           \
	int r = call_expr;                                                     \
	if (c.rec)                                                             \
		call_end(c, name, (bytes_expr), -1, comm_size(comm));          \
	return r

PUB int MPI_Barrier(MPI_Comm comm)
{
	COLL("MPI_Barrier", REAL(MPI_Barrier)(comm), 0, comm);
}

PUB int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
	COLL("MPI_Bcast", REAL(MPI_Bcast)(buf, count, t, root, comm), type_bytes(count, t), comm);
}

PUB int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
	COLL("MPI_Reduce", REAL(MPI_Reduce)(sb, rb, count, t, op, root, comm), type_bytes(count, t), comm);
}

PUB int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	COLL("MPI_Allreduce", REAL(MPI_Allreduce)(sb, rb, count, t, op, comm), type_bytes(count, t), comm);
}

PUB int MPI_Iallreduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
		       MPI_Request *req)
{
	COLL("MPI_Iallreduce", REAL(MPI_Iallreduce)(sb, rb, count, t, op, comm, req), type_bytes(count, t), comm);
}

PUB int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	COLL("MPI_Allgather", REAL(MPI_Allgather)(sb, sc, st, rb, rc, rt, comm),
	     sb == MPI_IN_PLACE ? type_bytes(rc, rt) : type_bytes(sc, st), comm);
}

PUB int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int dis[],
		       MPI_Datatype rt, MPI_Comm comm)
{
	COLL("MPI_Allgatherv", REAL(MPI_Allgatherv)(sb, sc, st, rb, rcs, dis, rt, comm),
	     sb == MPI_IN_PLACE ? 0 : type_bytes(sc, st), comm);
}

PUB int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	COLL("MPI_Alltoall", REAL(MPI_Alltoall)(sb, sc, st, rb, rc, rt, comm),
	     (sb == MPI_IN_PLACE ? type_bytes(rc, rt) : type_bytes(sc, st)) * comm_size(comm), comm);
}

PUB int MPI_Alltoallv(const void *sb, const int scs[], const int sd[], MPI_Datatype st, void *rb,
		      const int rcs[], const int rd[], MPI_Datatype rt, MPI_Comm comm)
{
	COLL("MPI_Alltoallv", REAL(MPI_Alltoallv)(sb, scs, sd, st, rb, rcs, rd, rt, comm),
	     sb == MPI_IN_PLACE ? 0 : type_bytes((int)sum_counts(scs, comm), st), comm);
}

PUB int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
		   MPI_Comm comm)
{
	COLL("MPI_Gather", REAL(MPI_Gather)(sb, sc, st, rb, rc, rt, root, comm),
	     sb == MPI_IN_PLACE ? type_bytes(rc, rt) : type_bytes(sc, st), comm);
}

PUB int MPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int dis[],
		    MPI_Datatype rt, int root, MPI_Comm comm)
{
	COLL("MPI_Gatherv", REAL(MPI_Gatherv)(sb, sc, st, rb, rcs, dis, rt, root, comm),
	     sb == MPI_IN_PLACE ? 0 : type_bytes(sc, st), comm);
}

PUB int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
		    MPI_Comm comm)
{
	COLL("MPI_Scatter", REAL(MPI_Scatter)(sb, sc, st, rb, rc, rt, root, comm),
	     rb == MPI_IN_PLACE ? type_bytes(sc, st) : type_bytes(rc, rt), comm);
}

PUB int MPI_Scatterv(const void *sb, const int scs[], const int dis[], MPI_Datatype st, void *rb, int rc,
		     MPI_Datatype rt, int root, MPI_Comm comm)
{
	COLL("MPI_Scatterv", REAL(MPI_Scatterv)(sb, scs, dis, st, rb, rc, rt, root, comm),
	     rb == MPI_IN_PLACE ? 0 : type_bytes(rc, rt), comm);
}

PUB int MPI_Reduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	COLL("MPI_Reduce_scatter", REAL(MPI_Reduce_scatter)(sb, rb, rcs, t, op, comm),
	     type_bytes((int)sum_counts(rcs, comm), t), comm);
}

PUB int MPI_Reduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	COLL("MPI_Reduce_scatter_block", REAL(MPI_Reduce_scatter_block)(sb, rb, rc, t, op, comm),
	     type_bytes(rc, t) * comm_size(comm), comm);
}

PUB int MPI_Scan(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	COLL("MPI_Scan", REAL(MPI_Scan)(sb, rb, count, t, op, comm), type_bytes(count, t), comm);
}

/* ---- point to point: peer is the destination or the requested source ---- */
DECL(MPI_Send);
DECL(MPI_Ssend);
DECL(MPI_Recv);
DECL(MPI_Isend);
DECL(MPI_Irecv);
DECL(MPI_Sendrecv);
DECL(MPI_Wait);
DECL(MPI_Waitall);
DECL(MPI_Waitany);

#define P2P(name, call_expr, bytes_expr, peer)                                 \
	SITE(PP_COMM, name);                                                   \
	call c = call_begin(&site_);                                           \
	int r = call_expr;                                                     \
	call_end(c, name, (bytes_expr), (peer), -1);                           \
	return r

PUB int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
	P2P("MPI_Send", REAL(MPI_Send)(buf, count, t, dest, tag, comm), c.rec ? type_bytes(count, t) : 0, dest);
}

PUB int MPI_Ssend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
	P2P("MPI_Ssend", REAL(MPI_Ssend)(buf, count, t, dest, tag, comm), c.rec ? type_bytes(count, t) : 0, dest);
}

PUB int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status *status)
{
	P2P("MPI_Recv", REAL(MPI_Recv)(buf, count, t, src, tag, comm, status), c.rec ? type_bytes(count, t) : 0, src);
}

PUB int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
	P2P("MPI_Isend", REAL(MPI_Isend)(buf, count, t, dest, tag, comm, req), c.rec ? type_bytes(count, t) : 0, dest);
}

PUB int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Request *req)
{
	P2P("MPI_Irecv", REAL(MPI_Irecv)(buf, count, t, src, tag, comm, req), c.rec ? type_bytes(count, t) : 0, src);
}

PUB int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int stag, void *rb, int rc,
		     MPI_Datatype rt, int src, int rtag, MPI_Comm comm, MPI_Status *status)
{
	P2P("MPI_Sendrecv", REAL(MPI_Sendrecv)(sb, sc, st, dest, stag, rb, rc, rt, src, rtag, comm, status),
	    c.rec ? type_bytes(sc, st) + type_bytes(rc, rt) : 0, dest);
}

/* Waits: the bytes belong to the Isend/Irecv that posted them. */
PUB int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
	P2P("MPI_Wait", REAL(MPI_Wait)(req, status), 0, -1);
}

PUB int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status *statuses)
{
	P2P("MPI_Waitall", REAL(MPI_Waitall)(n, reqs, statuses), 0, -1);
}

PUB int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
	P2P("MPI_Waitany", REAL(MPI_Waitany)(n, reqs, index, status), 0, -1);
}
