/*
 * pp_env.h — the environment protocol between `phaseprof record` (the
 * session supervisor, session/session_env.c) and what runs inside the
 * recorded program (the agent, the recorder, the GPU collector, the Python
 * package). Every PHASEPROF_* variable is named here, once; each says who
 * sets it and who reads it. tests/layout/check_env.py fails on a name the
 * C sources or the Python package use that is not declared here.
 *
 * "Passed through": record keeps it from its own environment for the
 * program (session_env.c); every other PHASEPROF_* variable of record's
 * environment is dropped, so a stale one cannot redirect a recording.
 */
#ifndef PP_ENV_H
#define PP_ENV_H

/* What record keeps or drops of its own environment starts so. */
#define PP_ENV_PREFIX "PHASEPROF_"

/* --- set by record for each recording --------------------------------- */

/* The session's private spool folder (absolute). Set by record; read by
 * the agent (agent.c) and the recorder (recorder.c: one spool per process
 * image inside it); carried across exec by the agent (agent_proc.c). */
#define PP_ENV_SPOOL_DIR "PHASEPROF_SPOOL_DIR"
/* The agent library's path. Set by record; read by the agent to preload
 * itself again into children whose environment lost it (agent_proc.c). */
#define PP_ENV_AGENT "PHASEPROF_AGENT"
/* CPU samples per second and thread (--sample), unset: none. Set by
 * record; read by the agent. */
#define PP_ENV_SAMPLE_HZ "PHASEPROF_SAMPLE_HZ"
/* "default" or "detailed" (--mode). Set by record; read by the agent. */
#define PP_ENV_MODE "PHASEPROF_MODE"
/* "1" follow forks and spawns, "0" (--no-follow-fork) only the first
 * process. Set by record; read by the agent. */
#define PP_ENV_FOLLOW_FORK "PHASEPROF_FOLLOW_FORK"
/* "0" turns the CPython layer off (--no-python; passed through otherwise).
 * Set by record or the user; read by the agent (agent_python.c,
 * agent_pystack.c). */
#define PP_ENV_PYTHON "PHASEPROF_PYTHON"

/* --- set by the user (passed through by record) ----------------------- */

/* A fixed spool path for a program that links the recorder itself or runs
 * the agent without record. Set by the user; read by the recorder and the
 * agent; dropped by record and by the agent across exec (it would win over
 * the spool folder). */
#define PP_ENV_OUT "PHASEPROF_OUT"
/* "mono": the recorder stamps with CLOCK_MONOTONIC, not the TSC (clock.c).
 * Set by the user or a test; passed through; read by the recorder. */
#define PP_ENV_CLOCK "PHASEPROF_CLOCK"
/* One allocation event in N in --mode detailed (1000). Set by the user;
 * passed through; read by the agent. */
#define PP_ENV_ALLOC_SAMPLE "PHASEPROF_ALLOC_SAMPLE"
/* The agent thread's period in ms (20). Set by the user or a test; passed
 * through; read by the agent. */
#define PP_ENV_AGENT_PERIOD_MS "PHASEPROF_AGENT_PERIOD_MS"
/* "0": no step_kept records (agent_kept.c). Set by the user or a test;
 * passed through; read by the agent. */
#define PP_ENV_KEPT "PHASEPROF_KEPT"
/* The libcuda / libcupti to load. Set by the user; read by the GPU
 * collector (gpu/probe.c). */
#define PP_ENV_LIBCUDA "PHASEPROF_LIBCUDA"
#define PP_ENV_LIBCUPTI "PHASEPROF_LIBCUPTI"
/* Seconds a read query may run. Set by the user; read by the store
 * (store.c), not by anything inside the program. */
#define PP_ENV_QUERY_TIMEOUT "PHASEPROF_QUERY_TIMEOUT"
/* Areas of the commands' debug messages (store, ingest, diag; 1 or all).
 * Set by the user; read by common/pp_debug.c in the phaseprof process
 * only, never inside the program. */
#define PP_ENV_DEBUG "PHASEPROF_DEBUG"

/* --- tests only -------------------------------------------------------- */

/* A CPython version the agent's stack reader takes as checked. Set by
 * tests; passed through; read by the agent (agent_pystack.c). */
#define PP_ENV_PYSTACK_FAKE_VERSION "PHASEPROF_PYSTACK_FAKE_VERSION"
/* Few, small recorder buffers (recording threads write the spool
 * themselves). Set by tests; passed through; read by the agent. */
#define PP_ENV_BUFFER_EVENTS "PHASEPROF_BUFFER_EVENTS"
#define PP_ENV_MAX_BUFFERS "PHASEPROF_MAX_BUFFERS"
/* Makes a demo scenario crash on purpose. Set by tests; read by
 * demo/scenarios/scenarios.c. */
#define PP_ENV_SCN_CRASH "PHASEPROF_SCN_CRASH"

#endif
