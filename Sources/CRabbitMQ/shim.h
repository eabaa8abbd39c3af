/// Umbrella header: the CRabbitMQ boundary exposes these headers to Swift unchanged.
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <amqp_ssl_socket.h>
#include <amqp_framing.h>
