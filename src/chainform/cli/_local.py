"""`chainform local prepare`: fetch and convert the embedded model ahead of the first prompt."""

from __future__ import annotations

import click


@click.group(name="local")
def local_command() -> None:
    """The embedded offline model."""


@local_command.command(name="prepare")
@click.option("--model", "model", default=None, help="'smollm2' (default) or a path to a .gguf file.")
@click.option(
    "--backend",
    type=click.Choice(["torch", "onnx"]),
    default="torch",
    show_default=True,
    help="onnx also builds the ONNX Runtime GenAI model, the faster backend, which `local` then uses.",
)
@click.option(
    "--precision",
    type=click.Choice(["int8", "int4", "fp32"]),
    default="int8",
    show_default=True,
    help="Weights of the ONNX model: int8 is the fastest that keeps SmolLM2's answers right.",
)
@click.option("--force", is_flag=True, help="Prepare again even if the weights are already there.")
def local_prepare(model: str | None, backend: str, precision: str, force: bool) -> None:
    """Download and prepare the embedded model's weights (done once; later runs are offline)."""
    try:
        from chainform.local import prepare
    except ImportError as exc:
        raise click.ClickException(
            f"the embedded model is not available ({exc}); install chainform[local]"
        ) from None
    result = prepare(model or "smollm2", backend=backend, precision=precision, force=force)
    if result is not None:
        click.echo(str(result))
