/* An unmodified NVTX program: header-only nvtx3 from the CUDA toolkit, no
 * phaseprof headers. Exercises core and domain variants, ASCII, wide and
 * registered strings, marks with payloads, start/end ranges ended on another
 * thread, a stray pop, and thread naming. Prints what NVTX returned so the
 * test can check the injected return values too. */
#include <nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

static nvtxRangeId_t handoff;

static void *ender(void *arg)
{
	(void)arg;
	nvtxRangeEnd(handoff);
	nvtxRangePushA("worker-range");
	nvtxRangePop();
	return NULL;
}

int main(void)
{
	nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");
	int l0 = nvtxRangePushA("outer");
	int l1 = nvtxRangePushA("inner");
	nvtxMarkA("checkpoint");
	int p1 = nvtxRangePop();
	int p0 = nvtxRangePop();
	int stray = nvtxRangePop(); /* no matching push */

	nvtxRangePushW(L"wide-r\u00e4nge");
	nvtxRangePop();

	nvtxDomainHandle_t dom = nvtxDomainCreateA("trainer");
	nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered-step");
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof a);
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = reg;
	nvtxDomainRangePushEx(dom, &a);
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "loss";
	a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	a.payload.dValue = 0.25;
	nvtxDomainMarkEx(dom, &a);
	nvtxDomainRangePop(dom);

	nvtxEventAttributes_t b;
	memset(&b, 0, sizeof b);
	b.version = NVTX_VERSION;
	b.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	b.messageType = NVTX_MESSAGE_TYPE_ASCII;
	b.message.ascii = "ex-range";
	nvtxRangePushEx(&b);
	nvtxRangePop();

	handoff = nvtxRangeStartA("async-range");
	pthread_t th;
	pthread_create(&th, NULL, ender, NULL);
	pthread_join(th, NULL);
	nvtxDomainDestroy(dom);
	printf("levels %d %d pops %d %d stray %d\n", l0, l1, p1, p0, stray);
	return 0;
}
