"""The credential families: what a finding is, and the table of families.

`CredentialFinding` is one span of a text a family's rule matched;
`FAMILIES` names every family the detector finds, what it is and where its
shape is documented (specs/secrets.md gives the same table).
"""

from __future__ import annotations

from attrs import frozen


@frozen
class CredentialFinding:
    """A credential of `family` at `text[start:end]`."""

    family: str
    start: int
    end: int


@frozen
class CredentialFamily:
    """One family of credentials: its name, what it is, where the shape is documented."""

    name: str
    description: str
    sources: tuple[str, ...]


FAMILIES: tuple[CredentialFamily, ...] = (
    CredentialFamily(
        "aws-access-key-id",
        "AWS access key ids (AKIA long-term, ASIA temporary, ABIA, ACCA, A3T...)",
        (
            "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html",
            "gitleaks cmd/generate/config/rules/aws.go",
        ),
    ),
    CredentialFamily(
        "aws-secret-access-key",
        "AWS secret access keys: 40 base64 characters near the word aws",
        ("https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html",),
    ),
    CredentialFamily(
        "gcp-api-key",
        "Google Cloud / Google AI API keys (AIza + 35)",
        (
            "https://cloud.google.com/docs/authentication/api-keys",
            "gitleaks cmd/generate/config/rules/gcp.go",
        ),
    ),
    CredentialFamily(
        "azure-client-secret",
        "Azure AD (Entra ID) client secrets: three characters, a digit, Q~, 31-34 more",
        (
            "https://learn.microsoft.com/en-us/purview/sit-defn-azure-ad-client-secret",
            "gitleaks cmd/generate/config/rules/azure.go",
        ),
    ),
    CredentialFamily(
        "azure-storage-key",
        "Azure storage account keys (AccountKey=...) and SAS signatures (sig=...)",
        (
            "https://learn.microsoft.com/en-us/azure/storage/common/storage-configure-connection-string",
            "https://learn.microsoft.com/en-us/rest/api/storageservices/create-service-sas",
        ),
    ),
    CredentialFamily(
        "github-token",
        "GitHub tokens: classic ghp_/gho_/ghu_/ghs_/ghr_ and fine-grained github_pat_",
        (
            "https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/",
            "gitleaks cmd/generate/config/rules/github.go",
        ),
    ),
    CredentialFamily(
        "gitlab-token",
        "GitLab tokens: glpat-, gldt-, glrt-, glptt-, glcbt-, ... and runner GR1348941",
        (
            "https://docs.gitlab.com/ee/security/tokens/#token-prefixes",
            "gitleaks cmd/generate/config/rules/gitlab.go",
        ),
    ),
    CredentialFamily(
        "slack-token",
        "Slack tokens (xoxb-, xoxp-, xoxa-, xoxr-, xoxe-, xoxs-, xapp-) and webhook URLs",
        (
            "https://api.slack.com/authentication/token-types",
            "https://api.slack.com/messaging/webhooks",
            "gitleaks cmd/generate/config/rules/slack.go",
        ),
    ),
    CredentialFamily(
        "stripe-key",
        "Stripe secret, restricted and publishable keys (sk_/rk_/pk_ live/test) and whsec_",
        ("https://docs.stripe.com/keys", "gitleaks cmd/generate/config/rules/stripe.go"),
    ),
    CredentialFamily(
        "anthropic-key",
        "Anthropic API, admin and OAuth keys (sk-ant-api03-, sk-ant-admin01-, sk-ant-oat01-)",
        ("gitleaks cmd/generate/config/rules/anthropic.go",),
    ),
    CredentialFamily(
        "openai-key",
        "OpenAI keys (sk-proj-, sk-svcacct-, sk-admin-, legacy sk-...T3BlbkFJ...)",
        ("gitleaks cmd/generate/config/rules/openai.go",),
    ),
    CredentialFamily(
        "model-provider-key",
        "other model providers: any sk-... key (DeepSeek, OpenRouter sk-or-, ...), Groq "
        "gsk_, Hugging Face hf_, xAI xai-, Perplexity pplx-, Replicate r8_",
        (
            "https://huggingface.co/docs/hub/security-tokens",
            "gitleaks cmd/generate/config/rules/groq.go, huggingface.go",
        ),
    ),
    CredentialFamily(
        "private-key",
        "PEM, OpenSSH and PGP private key blocks, multi-line or with escaped newlines, "
        "also cut (no END line, or no BEGIN line)",
        (
            "https://www.rfc-editor.org/rfc/rfc7468",
            "https://www.rfc-editor.org/rfc/rfc4880#section-6.2",
            "https://github.com/openssh/openssh-portable/blob/master/PROTOCOL.key",
            "gitleaks cmd/generate/config/rules/privatekey.go",
        ),
    ),
    CredentialFamily(
        "jwt",
        "JSON Web Tokens (compact serialization: eyJ header . payload . signature)",
        ("https://www.rfc-editor.org/rfc/rfc7519", "https://www.rfc-editor.org/rfc/rfc7515"),
    ),
    CredentialFamily(
        "authorization-header",
        "the credentials of an Authorization or Proxy-Authorization header of any scheme, "
        "and Bearer tokens",
        (
            "https://www.rfc-editor.org/rfc/rfc9110#section-11.6.2",
            "https://www.rfc-editor.org/rfc/rfc6750",
            "gitleaks cmd/generate/config/rules/curl.go",
        ),
    ),
    CredentialFamily(
        "basic-auth-url",
        "the password in a URL's userinfo (scheme://user:password@host), also once a "
        "path normalisation folded the URL's // (scheme:/user:password@host)",
        (
            "https://www.rfc-editor.org/rfc/rfc3986#section-3.2.1",
            "detect-secrets detect_secrets/plugins/basic_auth.py",
        ),
    ),
    CredentialFamily(
        "secret-assignment",
        "the value given to a secret-named field or variable, in JSON, YAML, env, ini and "
        "code form: password, passwd, pwd, secret, token, api_key, credentials, *_KEY, "
        "*_TOKEN, *_SECRET, *_PASSWORD, *_CREDENTIALS, DATABASE_URL-style URLs",
        (
            "detect-secrets detect_secrets/plugins/keyword.py",
            "gitleaks cmd/generate/config/rules/generic.go",
        ),
    ),
    CredentialFamily(
        "environment-value",
        "the literal value of a secret-named environment variable (the redactor's own)",
        ("specs/secrets.md",),
    ),
)
FAMILY_NAMES = frozenset(f.name for f in FAMILIES)
