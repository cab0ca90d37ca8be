/* phaseprof doctor — what GPU tracing can do on this machine, and why not.
 * Runs the driver probe (dlopen libcuda.so.1, cuInit) before touching CUPTI,
 * then checks that CUPTI can be attached, and says in plain words what will
 * and won't be recorded. */
#include "cli.h"
#include "ppgpu.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char cmd_doctor_summary[] = "check GPU tracing: NVIDIA driver, device, CUPTI, NVTX injection";

static void usage(FILE *f)
{
	fputs("usage: phaseprof doctor [--libcuda PATH] [--libcupti PATH] [--json] [--check]\n"
	      "  Probes the NVIDIA driver (dlopen + cuInit) and CUPTI and prints what GPU\n"
	      "  tracing will and won't record here.\n"
	      "  --libcuda PATH   driver library to probe (default $PHASEPROF_LIBCUDA, libcuda.so.1)\n"
	      "  --libcupti PATH  CUPTI library to try (default $PHASEPROF_LIBCUPTI, the loader path,\n"
	      "                   then the toolkit phaseprof was built against)\n"
	      "  --json           one JSON object instead of text\n"
	      "  --check          exit status 0 only if GPU tracing is available (else 3)\n",
	      f);
}

static void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

int cmd_doctor(int argc, char **argv)
{
	const char *libcuda = NULL, *libcupti = NULL;
	int json = 0, check = 0;
	for (int i = 1; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--libcuda") == 0 && i + 1 < argc) {
			libcuda = argv[++i];
		} else if (strcmp(argv[i], "--libcupti") == 0 && i + 1 < argc) {
			libcupti = argv[++i];
		} else if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--check") == 0) {
			check = 1;
		} else {
			cli_error("doctor: unknown argument '%s' (see phaseprof doctor --help)", argv[i]);
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
	snprintf(agent, sizeof agent, "%s/libphaseprof-agent.so", cli_self_dir());
	int have_agent = access(agent, R_OK) == 0;

	if (json) {
		printf("{\"available\":%s,\"state\":", r.state == PPGPU_OK ? "true" : "false");
		json_str(ppgpu_state_name(r.state));
		printf(",\"reason\":");
		json_str(r.reason);
		printf(",\"driver\":{\"library\":");
		json_str(r.driver_path);
		printf(",\"cuInit\":%d,\"cuInit_name\":", r.cu_result);
		json_str(r.cu_result >= 0 ? ppgpu_cu_result_name(r.cu_result) : "");
		printf(",\"version\":%d,\"devices\":%d,\"device0\":", r.driver_version, r.device_count);
		json_str(r.device_name);
		printf("},\"cupti\":{\"library\":");
		json_str(r.cupti_path);
		printf(",\"version\":%u,\"result\":%d,\"holder\":", r.cupti_version, r.cupti_result);
		json_str(r.holder);
		printf("},\"built\":{\"cupti_collector\":%s,\"nvtx_injection\":%s},\"agent\":",
		       feat & PPGPU_HAVE_CUPTI ? "true" : "false", feat & PPGPU_HAVE_NVTX ? "true" : "false");
		json_str(have_agent ? agent : "");
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
		printf("  agent        %s\n", have_agent ? agent : "not built next to this binary (record is unavailable)");
		printf("\n%s\n", ppgpu_state_advice(r.state));
		if (feat & PPGPU_HAVE_NVTX)
			printf("NVTX ranges (nvtxRangePush/Pop, marks, domains) in wrapped programs become phases\n"
			       "with or without a GPU: `phaseprof record` sets NVTX_INJECTION64_PATH.\n");
	}
	if (check)
		return r.state == PPGPU_OK ? 0 : 3;
	return 0;
}
