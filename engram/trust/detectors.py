"""The detect-secrets plugins engram runs: the library's provider plugins and a few of
our own for formats it lacks, written against its interface.

Kept apart from :mod:`engram.trust.secrets` so that importing engram (every CLI command
starts by doing so) does not import detect-secrets; the first scan imports this module,
and :mod:`engram.trust.secrets` reaches detect-secrets only through it.

Without ``requests``. Every plugin module of detect-secrets imports ``requests`` for its
network verification, which engram never runs ("never its network verification",
:mod:`engram.trust.secrets`). Importing it (urllib3, charset detection, idna, certifi)
costs about 0.12 s of CPU — more than scanning a commit — and the pre-commit hook pays
it on every commit. So, unless something in the process imported it already,
``requests`` is first a stand-in module (:class:`Deferred`): ``import requests`` gets
the stand-in, and its first attribute read imports the real module, which then takes
its place in ``sys.modules``. Code that uses requests works as before, a moment later.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any


class Deferred(types.ModuleType):
    """A module imported on its first attribute read (see the module docstring)."""

    def __getattr__(self, attr: str) -> Any:
        if sys.modules.get(self.__name__) is self:
            sys.modules.pop(self.__name__, None)
        return getattr(importlib.import_module(self.__name__), attr)


def defer(name: str) -> None:
    """Make ``name`` a :class:`Deferred` stand-in unless it is imported already (or absent)."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    stand_in = Deferred(name)
    stand_in.__spec__ = spec  # what `import` reads; the real module is not run
    sys.modules[name] = stand_in


defer("requests")

from detect_secrets.filters import heuristic as heuristic  # noqa: E402  (after defer)
from detect_secrets.plugins import keyword as keyword  # noqa: E402
from detect_secrets.plugins.base import RegexBasedDetector  # noqa: E402

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
