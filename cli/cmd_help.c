/* cmd_help lives in phaseprof.c: it needs the command table. */
