"""The outbound engine, one for every channel: ``dispatcher`` claims due rows under a lease,
sends them through a channel, records each attempt and schedules the retry or gives up
(``retry``: the schedule, the same for every channel); ``process`` runs it beside the
channel's intake consumer as one Procfile line."""
