"""Authentication and authorisation for the team server (ARCHITECTURE §13): API keys, JWT/OIDC, the principal
of a request, rate limits and the audit log. Imported by mcp, cli and app; imports core, store and providers."""

from gieok.auth.authenticator import Authenticator, credential_from
from gieok.auth.team import TeamAuth

__all__ = ["Authenticator", "TeamAuth", "credential_from"]
