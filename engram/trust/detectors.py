"""The detect-secrets plugins engram runs: the library's provider plugins and a few of
our own for formats it lacks, written against its interface.

Kept apart from :mod:`engram.trust.secrets` so that importing engram (every CLI command
starts by doing so) does not import detect-secrets, which pulls in ``requests``; the
first scan imports this module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

from detect_secrets.plugins.base import RegexBasedDetector

if TYPE_CHECKING:
    from detect_secrets.plugins.base import BasePlugin


class AnthropicKeyDetector(RegexBasedDetector):
    secret_type = "Anthropic API Key"
    denylist = (re.compile(r"sk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_\-]{40,}"),)


class OpenAIProjectKeyDetector(RegexBasedDetector):
    secret_type = "OpenAI API Key"
    denylist = (re.compile(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}"),)


class GoogleApiKeyDetector(RegexBasedDetector):
    secret_type = "Google API Key"
    denylist = (re.compile(r"AIza[0-9A-Za-z_\-]{35}"), re.compile(r"GOCSPX-[A-Za-z0-9_\-]{28}"))


class AzureClientSecretDetector(RegexBasedDetector):
    secret_type = "Azure AD Client Secret"
    denylist = (re.compile(r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"),)


class GitHubFineGrainedDetector(RegexBasedDetector):
    secret_type = "GitHub Token"
    denylist = (re.compile(r"github_pat_[A-Za-z0-9_]{60,}"),)


class UrlPasswordDetector(RegexBasedDetector):
    """``scheme://user:password@host`` where the password holds sub-delimiters (``!``,
    ``$``, ``&``…), which detect-secrets' basic-auth pattern leaves out."""

    secret_type = "Basic Auth Credentials"
    denylist = (re.compile(r"\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@]{1,64}:([^\s/@]{3,128})@[\w.\-]+"),)


class HuggingFaceDetector(RegexBasedDetector):
    secret_type = "Hugging Face Token"
    denylist = (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z]{34}(?![A-Za-z0-9])"),)


@cache
def plugins() -> tuple[BasePlugin, ...]:
    """The provider plugins (detect-secrets' own, then ours), built once per process."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    classes: Sequence[type[BasePlugin]] = (
        AWSKeyDetector, AzureStorageKeyDetector, BasicAuthDetector, DiscordBotTokenDetector,
        GitHubTokenDetector, GitLabTokenDetector, JwtTokenDetector, MailchimpDetector, NpmDetector,
        OpenAIDetector, PrivateKeyDetector, PypiTokenDetector, SendGridDetector, SlackDetector,
        SquareOAuthDetector, StripeDetector, TelegramBotTokenDetector, TwilioKeyDetector,
        AnthropicKeyDetector, OpenAIProjectKeyDetector, GoogleApiKeyDetector, AzureClientSecretDetector,
        GitHubFineGrainedDetector, HuggingFaceDetector, UrlPasswordDetector,
    )
    return tuple(cls() for cls in classes)
