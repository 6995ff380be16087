"""The SMTP side: where ``SMTP_URL`` points, and one connection that sends many emails.

``SMTP_URL`` is ``smtp://[user:password@]host[:port][?starttls=true]`` (port 25, or 587
with STARTTLS) or ``smtps://…`` (TLS from the start, port 465); user and password are
URL-encoded. The password is kept out of every ``repr``, log line and error: ``str(server)``
is the URL without credentials.

Each email carries a Message-ID made of its event id and kind: should a crash between
sending and recording ever send one again, the copy has the same Message-ID, which mail
clients and servers recognise as the same message.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from urllib.parse import parse_qs, unquote, urlsplit

from kassa_common.timefmt import utcnow

TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True)
class SmtpServer:
    host: str
    port: int
    tls: bool = False  # smtps: TLS from the first byte
    starttls: bool = False
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = TIMEOUT_SECONDS

    @classmethod
    def from_url(cls, url: str) -> SmtpServer:
        parts = urlsplit(url)
        tls = parts.scheme == "smtps"
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        starttls = not tls and query.get("starttls", "").strip().lower() in {"1", "true", "yes", "on"}
        port = parts.port or (465 if tls else 587 if starttls else 25)
        timeout = float(query.get("timeout", TIMEOUT_SECONDS))
        return cls(
            parts.hostname or "",
            port,
            tls,
            starttls,
            unquote(parts.username) if parts.username else None,
            unquote(parts.password) if parts.password else None,
            timeout,
        )

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'smtps' if self.tls else 'smtp'}://{host}:{self.port}" + ("?starttls=true" if self.starttls else "")

    def connect(self) -> smtplib.SMTP:
        """A connection ready to send: TLS as configured, logged in when a user is set."""
        context = ssl.create_default_context()
        if self.tls:
            conn: smtplib.SMTP = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=context)
        else:
            conn = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
        try:
            if self.starttls:
                conn.starttls(context=context)
            if self.username:
                conn.login(self.username, self.password or "")
        except BaseException:
            conn.close()
            raise
        return conn


def message_id(event_id: str, kind: str, sender: str) -> str:
    """``<event.kind@domain of SMTP_FROM>``: the same email always has the same id."""
    domain = parseaddr(sender)[1].rpartition("@")[2] or "localhost"
    return f"<{event_id}.{kind}@{domain}>"


def compose(
    *, sender: str, recipient: str, subject: str, text: str, html: str | None, event_id: str, kind: str
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = recipient
    msg["Subject"] = subject
    msg["Date"] = format_datetime(utcnow())
    msg["Message-ID"] = message_id(event_id, kind, sender)
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies
    msg.set_content(text)
    if html:
        msg.add_alternative(html, subtype="html")
    return msg


def permanent(exc: Exception) -> bool:
    """The server refused this email for good (a 5xx about it): trying again cannot help."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(code >= 500 for code, _ in exc.recipients.values())
    if isinstance(exc, (smtplib.SMTPSenderRefused, smtplib.SMTPDataError)):
        return exc.smtp_code >= 500
    return False


def describe(exc: Exception) -> str:
    """A short reason for the log and the row (server replies, never the URL or its password)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "recipient refused: " + "; ".join(
            f"{code} {reply.decode(errors='replace')}" for code, reply in exc.recipients.values()
        )
    if isinstance(exc, smtplib.SMTPResponseException):
        reply = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        return f"{type(exc).__name__}: {exc.smtp_code} {reply}"[:500]
    return f"{type(exc).__name__}: {exc}"[:500]
