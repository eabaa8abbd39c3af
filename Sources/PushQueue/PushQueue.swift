// The AMQP layer over RabbitMQ (rabbitmq-c). See README.md.
