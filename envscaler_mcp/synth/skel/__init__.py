"""SkelBuilder: mine environment topics from a task corpus, write each environment's code, check its quality."""

# Bump when a template under envscaler_mcp/synth/prompts/skel/ changes meaning; provenance also records a
# digest of the template files, so an unbumped edit is still visible.
PROMPT_VERSION = "skel-1"
