"""Messages between the processes: the bus contracts (``messages``), RabbitMQ's topology
(declared in one place), a publisher with batched publisher confirms, a consumer that acks
only after its transaction commits, the outbox writer (``outbox``: events recorded in the
transaction of their change) and the relay that publishes them after commit (``relay``)."""
