/*
 * phaseprof_annotate.h — let a program declare its own phases when it runs
 * under `phaseprof record`, at no cost and no link dependency otherwise.
 *
 * The declarations are weak: when libphaseprof-agent.so is not preloaded
 * the symbols resolve to NULL and the macros do nothing (the idea of
 * heaptrack_api.h). Include this instead of phaseprof.h in programs that
 * are not linked against the recorder.
 *
 *   PPA_PHASE_BEGIN(PP_WEIGHT_LOAD, "load weights");
 *   ...
 *   PPA_PHASE_END();
 */
#ifndef PHASEPROF_ANNOTATE_H
#define PHASEPROF_ANNOTATE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* same values as enum pp_kind in phaseprof.h */
#ifndef PHASEPROF_H
enum {
	PP_SPAN = 0, PP_PROCESS_START, PP_LIBRARY_LOAD, PP_RUNTIME_INIT, PP_OP_REGISTRATION,
	PP_GRAPH_BUILD, PP_SHAPE_INFERENCE, PP_SESSION_CREATE, PP_VARIABLE_CREATE,
	PP_VARIABLE_INIT, PP_WEIGHT_LOAD, PP_MEMORY_ALLOC, PP_GRADIENT_BUILD,
	PP_OPTIMIZER_SETUP, PP_COMPILE, PP_FIRST_STEP, PP_STEP, PP_DATA_TRANSFER,
	PP_DEVICE_INIT, PP_RETRACE, PP_SESSION_CLOSE, PP_OP,
	PP_IMPORT, PP_MODEL_BUILD, PP_FORWARD, PP_BACKWARD, PP_OPTIMIZER_STEP,
	PP_DATA_WAIT, PP_COMM, PP_COMM_INIT
};

__attribute__((weak)) void pp_phase_begin(int kind, const char *name);
__attribute__((weak)) void pp_phase_end(void);
__attribute__((weak)) void pp_step_begin(int64_t iteration);
__attribute__((weak)) void pp_step_end(void);
__attribute__((weak)) void pp_mark(const char *name);
__attribute__((weak)) void pp_counter(const char *name, double value);
__attribute__((weak)) void pp_thread_name(const char *name);
#endif

#define PPA_PHASE_BEGIN(kind, name) do { if (pp_phase_begin) pp_phase_begin((kind), (name)); } while (0)
#define PPA_PHASE_END() do { if (pp_phase_end) pp_phase_end(); } while (0)
#define PPA_STEP_BEGIN(i) do { if (pp_step_begin) pp_step_begin(i); } while (0)
#define PPA_STEP_END() do { if (pp_step_end) pp_step_end(); } while (0)
#define PPA_MARK(name) do { if (pp_mark) pp_mark(name); } while (0)
#define PPA_COUNTER(name, v) do { if (pp_counter) pp_counter((name), (v)); } while (0)

#ifdef __cplusplus
}
#endif
#endif
