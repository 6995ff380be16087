"""The settler process: consumes ``chain.transfer.*`` (and test mode's ``test.transfer.*``)
and applies the reports to payments through ``kassa_common.payments``
(``python -m kassa_settler.main``)."""
