/* Sleeps with usleep, nanosleep, select and sem_timedwait (2 ms each, 40
 * times) while another thread burns CPU (so samples keep coming): counts
 * the calls that returned EINTR. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static void *burn(void *arg)
{
	(void)arg;
	volatile unsigned long x = 0;
	while (!stop)
		x++;
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, burn, NULL);
	sem_t sem;
	sem_init(&sem, 0, 0);
	int eintr[4] = {0};
	for (int i = 0; i < 40; i++) {
		if (usleep(2000) != 0 && errno == EINTR)
			eintr[0]++;
		struct timespec d = {0, 2000000};
		if (nanosleep(&d, NULL) != 0 && errno == EINTR)
			eintr[1]++;
		struct timeval tv = {0, 2000};
		if (select(0, NULL, NULL, NULL, &tv) < 0 && errno == EINTR)
			eintr[2]++;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 2000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		if (sem_timedwait(&sem, &until) != 0 && errno == EINTR)
			eintr[3]++;
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("EINTR: usleep %d nanosleep %d select %d sem_timedwait %d\n", eintr[0], eintr[1], eintr[2], eintr[3]);
	return 0;
}
