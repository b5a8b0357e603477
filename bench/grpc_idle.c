/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_idle - a gRPC C core server and nothing else: what the library
 * itself wakes for when no call comes (bench_scale's floor for the idle
 * daemon's wakeups: procctl-node links the same library). Listens on
 * argv[1] (unix:PATH), insecure, no service registered, and waits on its
 * completion queue as procctl-node's gRPC thread does; SIGTERM ends it.
 * Usage: grpc_idle unix:PATH */
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	grpc_server_credentials *cr;
	grpc_completion_queue *cq;
	grpc_server *s;
	if (argc != 2) {
		fprintf(stderr, "usage: grpc_idle unix:PATH\n");
		return 2;
	}
	grpc_init();
	cq = grpc_completion_queue_create_for_next(NULL);
	s = grpc_server_create(NULL, NULL);
	grpc_server_register_completion_queue(s, cq, NULL);
	cr = grpc_insecure_server_credentials_create();
	if (!grpc_server_add_http2_port(s, argv[1], cr)) {
		fprintf(stderr, "grpc_idle: cannot listen on %s\n", argv[1]);
		return 1;
	}
	grpc_server_credentials_release(cr);
	grpc_server_start(s);
	for (;;)
		(void)grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
}
