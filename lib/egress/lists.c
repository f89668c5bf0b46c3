/*
 * Built-in egress lists. The denylist beats every allow, including the
 * session's own egressAllowlist, so keep it to things no coding agent needs:
 * cloud instance metadata (credentials live there) and telemetry sinks.
 * docs/egress.md must list the same entries.
 */
#include "egress/lists.h"

#include <stddef.h>

const struct egress_list_entry egress_baseline_allow[] = {
    /* LLM API providers */
    {"api.anthropic.com", "llm"},
    {"api.openai.com", "llm"},
    {"generativelanguage.googleapis.com", "llm"},
    {"aiplatform.googleapis.com", "llm"},
    {"api.mistral.ai", "llm"},
    {"api.cohere.com", "llm"},
    {"api.cohere.ai", "llm"},
    {"api.groq.com", "llm"},
    {"api.together.xyz", "llm"},
    {"api.deepseek.com", "llm"},
    {"api.x.ai", "llm"},
    {"api.fireworks.ai", "llm"},
    {"openrouter.ai", "llm"},
    {"bedrock-runtime.*.amazonaws.com", "llm"},
    {"bedrock.*.amazonaws.com", "llm"},
    {"*.openai.azure.com", "llm"},
    {"router.huggingface.co", "llm"},
    {"api-inference.huggingface.co", "llm"},
    /* git hosting (GitHub has its own list) */
    {"gitlab.com", "git"},
    {"registry.gitlab.com", "git"},
    {"bitbucket.org", "git"},
    {"api.bitbucket.org", "git"},
    {"codeberg.org", "git"},
    {"git.sr.ht", "git"},
    /* package registries */
    {"registry.npmjs.org", "registry"},
    {"registry.yarnpkg.com", "registry"},
    {"repo.yarnpkg.com", "registry"},
    {"pypi.org", "registry"},
    {"files.pythonhosted.org", "registry"},
    {"crates.io", "registry"},
    {"index.crates.io", "registry"},
    {"static.crates.io", "registry"},
    {"static.rust-lang.org", "registry"},
    {"proxy.golang.org", "registry"},
    {"sum.golang.org", "registry"},
    {"index.golang.org", "registry"},
    {"rubygems.org", "registry"},
    {"index.rubygems.org", "registry"},
    {"repo.maven.apache.org", "registry"},
    {"repo1.maven.org", "registry"},
    {"plugins.gradle.org", "registry"},
    {"services.gradle.org", "registry"},
    {"api.nuget.org", "registry"},
    {"pub.dev", "registry"},
    {"packagist.org", "registry"},
    {"repo.packagist.org", "registry"},
    {"hackage.haskell.org", "registry"},
    {"cpan.metacpan.org", "registry"},
    {"conda.anaconda.org", "registry"},
    {"repo.anaconda.com", "registry"},
    {"deb.debian.org", "registry"},
    {"security.debian.org", "registry"},
    {"archive.ubuntu.com", "registry"},
    {"security.ubuntu.com", "registry"},
    {"registry-1.docker.io", "registry"},
    {"auth.docker.io", "registry"},
    {"production.cloudflare.docker.com", "registry"},
    /* model catalogues */
    {"huggingface.co", "models"},
    {"cdn-lfs.huggingface.co", "models"},
    {"cdn-lfs-us-1.huggingface.co", "models"},
    {"*.hf.co", "models"},
    {"ollama.com", "models"},
    {"registry.ollama.ai", "models"},
    {NULL, NULL},
};

const struct egress_list_entry egress_github_allow[] = {
    {"github.com", "github"},
    {"*.github.com", "github"},
    {"*.githubusercontent.com", "github"},
    {"ghcr.io", "github"},
    {"*.githubcopilot.com", "github"},
    {"*.github.io", "github"},
    {NULL, NULL},
};

const struct egress_list_entry egress_baseline_deny[] = {
    /* cloud instance metadata: instance credentials are served here */
    {"169.254.169.254", "metadata"},      /* AWS, GCP, Azure, OCI, DigitalOcean, ... */
    {"[fd00:ec2::254]", "metadata"},      /* AWS IMDS over IPv6 */
    {"169.254.170.2", "metadata"},        /* AWS ECS task credentials */
    {"169.254.170.23", "metadata"},       /* AWS EKS pod identity */
    {"[fd00:ec2::23]", "metadata"},       /* AWS EKS pod identity, IPv6 */
    {"100.100.100.200", "metadata"},      /* Alibaba Cloud */
    {"168.63.129.16", "metadata"},        /* Azure wireserver */
    {"169.254.0.23", "metadata"},         /* Tencent Cloud */
    {"metadata.google.internal", "metadata"},
    {"metadata.goog", "metadata"},
    {"metadata", "metadata"},
    {"instance-data", "metadata"},
    {"instance-data.ec2.internal", "metadata"},
    {"metadata.tencentyun.com", "metadata"},
    {"metadata.platformequinix.com", "metadata"},
    /* telemetry sinks */
    {"statsig.anthropic.com", "telemetry"},
    {"api.statsig.com", "telemetry"},
    {"featuregates.org", "telemetry"},
    {"*.ingest.sentry.io", "telemetry"},
    {"*.ingest.us.sentry.io", "telemetry"},
    {"*.ingest.de.sentry.io", "telemetry"},
    {"api.segment.io", "telemetry"},
    {"api.mixpanel.com", "telemetry"},
    {"api.amplitude.com", "telemetry"},
    {"api2.amplitude.com", "telemetry"},
    {"browser-intake-datadoghq.com", "telemetry"},
    {NULL, NULL},
};
