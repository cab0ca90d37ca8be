/* phaseprof doctor — what GPU tracing can do on this machine, and why not.
 * Runs the driver probe (dlopen libcuda.so.1, cuInit) before touching CUPTI,
 * then checks that CUPTI can be attached, and says in plain words what will
 * and won't be recorded. */
#include "cli.h"
#include "cli_opt.h"
#include "ppgpu.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char cmd_doctor_summary[] = "check GPU tracing: NVIDIA driver, device, CUPTI, NVTX injection";

enum { OPT_LIBCUDA = 1, OPT_LIBCUPTI, OPT_JSON, OPT_CHECK };
static const cli_opt opts[] = {
	{OPT_LIBCUDA, 0, "libcuda", 1, "PATH", "driver library to probe (default $PHASEPROF_LIBCUDA, libcuda.so.1)", NULL},
	{OPT_LIBCUPTI, 0, "libcupti", 1, "PATH", "CUPTI library to try (default $PHASEPROF_LIBCUPTI, the loader path,\n"
	 "then the toolkit phaseprof was built against)", NULL},
	{OPT_JSON, 0, "json", 0, NULL, "one JSON object instead of text", NULL},
	{OPT_CHECK, 0, "check", 0, NULL, "exit status 0 only if GPU tracing is available (else 3)", NULL},
	{0},
};

static void usage(FILE *f)
{
	fputs("usage: phaseprof doctor [--libcuda PATH] [--libcupti PATH] [--json] [--check]\n"
	      "  Probes the NVIDIA driver (dlopen + cuInit) and CUPTI and prints what GPU\n"
	      "  tracing will and won't record here.\n",
	      f);
	cli_opt_help(f, opts);
}

int cmd_doctor(int argc, char **argv)
{
	const char *libcuda = NULL, *libcupti = NULL;
	int json = 0, check = 0;
	cli_parse p;
	cli_parse_init(&p, "doctor", opts, usage, argc, argv, 0);
	for (int c; (c = cli_parse_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case OPT_LIBCUDA:
			libcuda = p.val[0];
			break;
		case OPT_LIBCUPTI:
			libcupti = p.val[0];
			break;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_CHECK:
			check = 1;
			break;
		default:
			cli_error("doctor: unexpected argument '%s' (see phaseprof doctor --help)", p.val[0]);
			return 2;
		}
	}
	ppgpu_probe_result r;
	ppgpu_probe_driver(libcuda, &r);
	int driver_state = r.state;
	if (r.state == PPGPU_OK)
		ppgpu_probe_cupti(libcupti, &r);
	unsigned feat = ppgpu_features();
	/* A working driver and CUPTI are not enough if the collector was not built. */
	if (r.state == PPGPU_OK && !(feat & PPGPU_HAVE_CUPTI)) {
		r.state = PPGPU_NOT_BUILT;
		snprintf(r.reason, sizeof r.reason,
			 "the driver and CUPTI work, but this phaseprof was built without the CUPTI headers");
	}
	char agent[4096];
	int have_agent = cli_lib_path("libphaseprof-agent.so", agent, sizeof agent) == 0;

	if (json) {
		printf("{\"available\":%s,\"state\":", r.state == PPGPU_OK ? "true" : "false");
		pp_json_fputs(stdout, ppgpu_state_name(r.state));
		printf(",\"reason\":");
		pp_json_fputs(stdout, r.reason);
		printf(",\"driver\":{\"library\":");
		pp_json_fputs(stdout, r.driver_path);
		printf(",\"cuInit\":%d,\"cuInit_name\":", r.cu_result);
		pp_json_fputs(stdout, r.cu_result >= 0 ? ppgpu_cu_result_name(r.cu_result) : "");
		printf(",\"version\":%d,\"devices\":%d,\"device0\":", r.driver_version, r.device_count);
		pp_json_fputs(stdout, r.device_name);
		printf("},\"cupti\":{\"library\":");
		pp_json_fputs(stdout, r.cupti_path);
		printf(",\"version\":%u,\"result\":%d,\"holder\":", r.cupti_version, r.cupti_result);
		pp_json_fputs(stdout, r.holder);
		printf("},\"built\":{\"cupti_collector\":%s,\"nvtx_injection\":%s},\"agent\":",
		       feat & PPGPU_HAVE_CUPTI ? "true" : "false", feat & PPGPU_HAVE_NVTX ? "true" : "false");
		pp_json_fputs(stdout, have_agent ? agent : "");
		printf("}\n");
	} else {
		printf("GPU tracing: %s\n", r.state == PPGPU_OK ? "available" : "unavailable");
		printf("  reason       %s\n", r.reason);
		printf("  state        %s\n", ppgpu_state_name(r.state));
		printf("  driver       %s", r.driver_path);
		if (r.cu_result >= 0)
			printf("  (cuInit -> %d %s)", r.cu_result, ppgpu_cu_result_name(r.cu_result));
		putchar('\n');
		if (r.driver_version > 0)
			printf("  version      %d.%d\n", r.driver_version / 1000, (r.driver_version % 1000) / 10);
		if (driver_state == PPGPU_OK)
			printf("  devices      %d%s%s\n", r.device_count, r.device_name[0] ? ", device 0: " : "",
			       r.device_name);
		if (r.cupti_result >= 0 || r.cupti_path[0])
			printf("  CUPTI        %s (version %u)%s%s\n", r.cupti_path[0] ? r.cupti_path : "?",
			       r.cupti_version, r.holder[0] ? ", held by " : "", r.holder);
		else
			printf("  CUPTI        not checked: it needs a working driver first\n");
		printf("  built with   CUPTI collector: %s; NVTX injection: %s\n",
		       feat & PPGPU_HAVE_CUPTI ? "yes" : "no", feat & PPGPU_HAVE_NVTX ? "yes" : "no");
		printf("  agent        %s\n", have_agent ? agent
						  : "not found beside this binary nor in " CLI_PKGLIB_FROM_BIN
						    " (record is unavailable)");
		printf("\n%s\n", ppgpu_state_advice(r.state));
		if (feat & PPGPU_HAVE_NVTX)
			printf("NVTX ranges (nvtxRangePush/Pop, marks, domains) in wrapped programs become phases\n"
			       "with or without a GPU: `phaseprof record` sets NVTX_INJECTION64_PATH.\n");
	}
	if (check)
		return r.state == PPGPU_OK ? 0 : 3;
	return 0;
}
