/* viewers_fixture DB [--steps N] [--ops N] [--scenario S] — writes a
 * recorded scenario database for the browser test and benchmarks:
 * a slow and a fixed variant of one scenario (graph growth, GPU rows, CPU
 * samples, worker threads). With --ops the slow run gets N ops per step. */
#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: viewers_fixture DB [--steps N] [--ops N] [--single]\n");
		return 2;
	}
	int steps = 40, ops = 6, single = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			ops = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--single"))
			single = 1;
		else {
			fprintf(stderr, "viewers_fixture: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	char *dir = vfix_tmpdir();
	if (!dir)
		return 1;
	vfix_opts slow = {.scenario = "growing-graph", .variant = "slow", .label = "slow", .steps = steps,
			  .ops_per_step = ops, .graph_versions = 12, .graph_nodes = 8, .gpu = 1, .samples = 200,
			  .threads = 2, .buffer_events = 65536, .max_buffers = 4096};
	vfix_opts fixed = {.scenario = "growing-graph", .variant = "ops-built-once", .label = "fixed",
			   .steps = steps, .ops_per_step = 4, .graph_versions = 1, .graph_nodes = 8};
	int rc = vfix_record(argv[1], dir, &slow) < 0 || (!single && vfix_record(argv[1], dir, &fixed) < 0);
	vfix_rmdir(dir);
	return rc;
}
