"""The sweeper: moves confirmed funds from forwarder deposit addresses to each merchant's
settlement address (DESIGN.md section 5, "Forwarder settlement")."""
