/*
 * train.c — one-time set-up of the training library: the "train" op
 * library and the gradient table.
 */
#include "train_internal.h"

#include <pthread.h>

static pthread_once_t grads_once = PTHREAD_ONCE_INIT;

int flow_train_init(flow_status *st)
{
	pthread_once(&grads_once, train_grads_register_builtin);
	/* Cheap when already registered; re-registers after flow_shutdown. */
	return train_ops_register(st);
}
