"""Choosing providers, credentials at the edge, and the request kill switch."""

from __future__ import annotations

import pytest

from envscaler_mcp.errors import ProviderNotConfigured, UsageError
from envscaler_mcp.providers import Message, get_provider
from envscaler_mcp.providers._adapter import RequestsBlocked, requests_blocked
from envscaler_mcp.providers.anthropic_messages import AnthropicProvider
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.providers.openai_chat import OpenAIChatProvider
from tests.providers.fakes import FakeServer, openai_completion

USER = [Message(role="user", content="hi")]


def test_the_suite_runs_with_requests_blocked() -> None:
    assert requests_blocked()


@pytest.mark.parametrize(("spec", "variable"), [("openai/gpt-4.1", "OPENAI_API_KEY"),
                                                ("anthropic/claude-haiku-4-5", "ANTHROPIC_API_KEY"),
                                                ("openai-compatible/qwen", "OPENAI_COMPATIBLE_BASE_URL")])
def test_missing_credentials_say_what_to_set(spec: str, variable: str) -> None:
    with pytest.raises(ProviderNotConfigured, match=variable):
        get_provider(spec, env={})


def test_credentials_and_urls_come_from_env() -> None:
    p = get_provider("openai-compatible/qwen", env={"OPENAI_COMPATIBLE_BASE_URL": "http://127.0.0.1:9/v1",
                                                    "OPENAI_COMPATIBLE_API_KEY": "k"})
    assert isinstance(p, OpenAIChatProvider)
    assert str(p.client.base_url) == "http://127.0.0.1:9/v1/" and p.client.api_key == "k"
    a = get_provider("anthropic/claude-haiku-4-5", env={"ANTHROPIC_API_KEY": "sk-ant"})
    assert isinstance(a, AnthropicProvider) and a.client.api_key == "sk-ant"


@pytest.mark.parametrize("spec", ["gemini/pro", "openai", "openai/", "anthropic"])
def test_bad_specs(spec: str) -> None:
    with pytest.raises(UsageError):
        get_provider(spec, env={})


@pytest.mark.anyio
@pytest.mark.parametrize("spec", ["openai/gpt-4.1", "anthropic/claude-haiku-4-5"])
async def test_kill_switch_refuses_real_clients(spec: str) -> None:
    p = get_provider(spec, api_key="sk-real-looking", retries=0)
    with pytest.raises(RequestsBlocked, match="ENVSCALER_MCP_BLOCK_REQUESTS"):
        await p.complete(USER)


@pytest.mark.anyio
async def test_kill_switch_lets_injected_clients_through(fake: FakeServer, openai_client) -> None:
    fake.answers.append((200, openai_completion("fine")))
    turn = await get_provider("openai/gpt-4.1", client=openai_client()).complete(USER)
    assert turn.message.content == "fine"


@pytest.mark.anyio
async def test_without_kill_switch_the_real_client_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # the request goes to a closed local port: proves the switch, not the network, stopped the call above
    monkeypatch.setenv("ENVSCALER_MCP_BLOCK_REQUESTS", "0")
    p = get_provider("openai/gpt-4.1", api_key="k", base_url="http://127.0.0.1:9/v1", retries=0)
    with pytest.raises(Exception) as info:
        await p.complete(USER)
    assert not isinstance(info.value, RequestsBlocked)


def test_mock_from_registry_and_the_oracle_is_no_provider() -> None:
    assert isinstance(get_provider("mock", script=["hi"]), MockProvider)
    with pytest.raises(UsageError, match=r"unknown provider 'oracle' in 'oracle'; use one of: anthropic/<model>, local/<model>, mock, "
                                                 r"openai/<model>, openai-compatible/<model>$"):
        get_provider("oracle")


def test_options_are_checked_against_the_providers_own_model() -> None:
    with pytest.raises(UsageError, match=r"mock: unknown option\(s\) threads; it takes: script, repeat_last"):
        get_provider("mock", threads=2)
    with pytest.raises(UsageError, match=r"openai: bad option \(retries: Input should be greater than or equal to 0\)"):
        get_provider("openai/gpt-4.1", api_key="k", retries=-1)
    # None means "not given": shared call sites can pass base_url=None to any provider
    assert isinstance(get_provider("mock", base_url=None), MockProvider)


def test_a_provider_registers_in_its_own_module(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import BaseModel

    from envscaler_mcp.providers import registry

    class EchoOptions(BaseModel):
        prefix: str = ">"

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._registry()))

    @registry.register_provider("echo", options=EchoOptions, example="echo/x")
    def echo(spec: str, model: str, options: EchoOptions) -> MockProvider:
        return MockProvider([f"{options.prefix}{model}"], spec=spec)

    assert "echo" in registry.provider_names()
    assert get_provider("echo/hi", prefix="#")._script == ["#hi"]
    with pytest.raises(UsageError, match=r"names no model; write echo/<model>, e.g. echo/x"):
        get_provider("echo")


def test_missing_sdk_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "anthropic":
            raise ImportError("No module named 'anthropic'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ProviderNotConfigured, match="pip install anthropic"):
        get_provider("anthropic/claude-haiku-4-5", env={"ANTHROPIC_API_KEY": "k"})


def test_every_provider_satisfies_the_interface(openai_client, anthropic_client) -> None:
    from envscaler_mcp.providers import Provider

    built = [get_provider("openai/gpt-4.1", client=openai_client()),
             get_provider("anthropic/claude-haiku-4-5", client=anthropic_client()),
             get_provider("openai-compatible/qwen", client=openai_client()), get_provider("mock")]
    assert all(isinstance(p, Provider) for p in built)
    assert [p.spec for p in built] == ["openai/gpt-4.1", "anthropic/claude-haiku-4-5", "openai-compatible/qwen",
                                       "mock"]
