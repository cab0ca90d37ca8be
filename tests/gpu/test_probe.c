/* The driver probe: each cuInit result mapped to its state and a plain
 * sentence (fake libcuda returning the code), a missing library, a library
 * that is not a driver, the toolkit's real stub libcuda, and the CUPTI step
 * (fake libcupti: another subscriber attached, insufficient privileges). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppgpu.h"

static void probe_code(int code, ppgpu_probe_result *r)
{
	char v[16];
	snprintf(v, sizeof v, "%d", code);
	setenv("FAKE_CUINIT", v, 1);
	ppgpu_probe_driver(FAKE_LIBCUDA, r);
	assert_int_equal(r->cu_result, code);
}

static void expect(int code, int state, const char *needle)
{
	ppgpu_probe_result r;
	probe_code(code, &r);
	if (r.state != state || !strstr(r.reason, needle))
		fail_msg("cuInit %d: state %s, reason \"%s\"; wanted %s with \"%s\"", code,
			 ppgpu_state_name(r.state), r.reason, ppgpu_state_name(state), needle);
	assert_int_equal(ppgpu_state_from_cu_result(code) == state || code == 0, 1);
}

static void test_error_mapping(void **s)
{
	(void)s;
	unsetenv("FAKE_DEVICES");
	expect(34, PPGPU_STUB_DRIVER, "stub libcuda");
	expect(34, PPGPU_STUB_DRIVER, "CUDA_ERROR_STUB_LIBRARY");
	expect(100, PPGPU_NO_DEVICE, "no GPU is visible");
	expect(100, PPGPU_NO_DEVICE, "CUDA_ERROR_NO_DEVICE");
	expect(35, PPGPU_DRIVER_TOO_OLD, "too old");
	expect(36, PPGPU_DRIVER_TOO_OLD, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER");
	expect(803, PPGPU_DRIVER_MISMATCH, "different versions");
	expect(804, PPGPU_DRIVER_MISMATCH, "forward-compatibility");
	expect(800, PPGPU_NO_PERMISSION, "not permitted");
	expect(304, PPGPU_DRIVER_ERROR, "CUDA_ERROR_OPERATING_SYSTEM");
	expect(999, PPGPU_DRIVER_ERROR, "CUDA_ERROR_UNKNOWN");
	expect(4242, PPGPU_DRIVER_ERROR, "CUresult 4242");
}

static void test_ok_reports_device(void **s)
{
	(void)s;
	setenv("FAKE_DEVICES", "2", 1);
	setenv("FAKE_DRIVER_VERSION", "13010", 1);
	ppgpu_probe_result r;
	probe_code(0, &r);
	assert_int_equal(r.state, PPGPU_OK);
	assert_int_equal(r.device_count, 2);
	assert_int_equal(r.driver_version, 13010);
	assert_string_equal(r.device_name, "Fake GPU 9000");
	assert_non_null(strstr(r.reason, "driver 13.1 with 2 GPUs (Fake GPU 9000)"));
	unsetenv("FAKE_DRIVER_VERSION");
}

static void test_zero_devices(void **s)
{
	(void)s;
	setenv("FAKE_DEVICES", "0", 1);
	ppgpu_probe_result r;
	probe_code(0, &r);
	assert_int_equal(r.state, PPGPU_NO_DEVICE);
	assert_non_null(strstr(r.reason, "0 devices"));
	unsetenv("FAKE_DEVICES");
}

static void test_missing_library(void **s)
{
	(void)s;
	ppgpu_probe_result r;
	ppgpu_probe_driver("/nonexistent/libcuda.so.1", &r);
	assert_int_equal(r.state, PPGPU_NO_DRIVER);
	assert_int_equal(r.cu_result, -1);
	assert_non_null(strstr(r.reason, "no NVIDIA driver"));
	assert_non_null(strstr(r.reason, "/nonexistent/libcuda.so.1"));
	/* the environment variable is the default path */
	setenv("PHASEPROF_LIBCUDA", "/nonexistent/other.so", 1);
	ppgpu_probe_driver(NULL, &r);
	assert_non_null(strstr(r.reason, "/nonexistent/other.so"));
	unsetenv("PHASEPROF_LIBCUDA");
}

static void test_not_a_driver(void **s)
{
	(void)s;
	ppgpu_probe_result r;
	ppgpu_probe_driver("libm.so.6", &r);
	assert_int_equal(r.state, PPGPU_DRIVER_ERROR);
	assert_non_null(strstr(r.reason, "has no cuInit"));
}

static void test_real_stub(void **s)
{
	(void)s;
	if (!STUB_LIBCUDA[0])
		skip();
	ppgpu_probe_result r;
	ppgpu_probe_driver(STUB_LIBCUDA, &r);
	assert_int_equal(r.cu_result, 34);
	assert_int_equal(r.state, PPGPU_STUB_DRIVER);
	assert_non_null(strstr(r.reason, "stubs/libcuda.so"));
	assert_non_null(strstr(ppgpu_state_advice(r.state), "CPU"));
}

static void test_cupti_busy_names_holder(void **s)
{
	(void)s;
	setenv("FAKE_CUPTI_SUBSCRIBE", "39", 1);
	setenv("FAKE_CUPTI_HOLDER", "Nsight Systems", 1);
	ppgpu_probe_result r;
	probe_code(0, &r);
	assert_int_equal(r.state, PPGPU_OK);
	ppgpu_probe_cupti(FAKE_LIBCUPTI, &r);
	assert_int_equal(r.state, PPGPU_CUPTI_BUSY);
	assert_int_equal(r.cupti_result, 39);
	assert_string_equal(r.holder, "Nsight Systems");
	assert_non_null(strstr(r.reason, "\"Nsight Systems\""));
	assert_non_null(strstr(r.reason, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"));

	setenv("FAKE_CUPTI_SUBSCRIBE", "35", 1);
	probe_code(0, &r);
	ppgpu_probe_cupti(FAKE_LIBCUPTI, &r);
	assert_int_equal(r.state, PPGPU_NO_PERMISSION);
	assert_non_null(strstr(r.reason, "NVreg_RestrictProfilingToAdminUsers"));

	unsetenv("FAKE_CUPTI_SUBSCRIBE");
	probe_code(0, &r);
	ppgpu_probe_cupti(FAKE_LIBCUPTI, &r);
	assert_int_equal(r.state, PPGPU_OK);
	assert_true(r.cupti_version >= 130000);
	assert_non_null(strstr(r.reason, "CUPTI 13"));
}

static void test_names(void **s)
{
	(void)s;
	assert_string_equal(ppgpu_state_name(PPGPU_STUB_DRIVER), "stub_driver");
	assert_string_equal(ppgpu_state_name(99), "invalid");
	assert_string_equal(ppgpu_cu_result_name(100), "CUDA_ERROR_NO_DEVICE");
	for (int st = 0; st < PPGPU_STATE_COUNT; st++)
		assert_true(strlen(ppgpu_state_advice(st)) > 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_mapping),
		cmocka_unit_test(test_ok_reports_device),
		cmocka_unit_test(test_zero_devices),
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_not_a_driver),
		cmocka_unit_test(test_real_stub),
		cmocka_unit_test(test_cupti_busy_names_holder),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
