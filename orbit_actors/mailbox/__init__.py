"""Mailboxes: bounded trio channels of typed commands with one-shot replies."""

from .mailbox import Command, Mailbox, Reply, ReplyTo

__all__ = ["Command", "Mailbox", "Reply", "ReplyTo"]
