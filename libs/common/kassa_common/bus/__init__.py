"""RabbitMQ plumbing: topology (declared in one place), a publisher with batched
publisher confirms, and a consumer that acks only after its transaction commits."""
