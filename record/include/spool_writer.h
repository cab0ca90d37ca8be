/*
 * spool_writer.h — what a process outside the recorded program writes into
 * its spool folder (record's supervisor). The program's own writer is the
 * recorder (phaseprof.h); the format is spool.h.
 */
#ifndef PP_SPOOL_WRITER_H
#define PP_SPOOL_WRITER_H

#include <stdint.h>

/* Appends an exit chunk (spool.h) to the last spool of process pid in dir (one whose
 * header names parent as its parent, unless parent is 0). A process that
 * reaped pid calls it: the status the child's own agent could not record
 * (SIGKILL, a fatal signal whose handler the program replaced). 0 or -1;
 * async-signal-safe. */
int pp_spool_note_exit(const char *dir, int32_t pid, uint32_t parent, int32_t code, int32_t sig);

#endif
