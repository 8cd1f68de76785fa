"""CTAB-GAN+'s convolutional generator and discriminator (Zhao et al. 2022; plain ``nn.Module`` s, no privacy code).

CTAB-GAN+ treats an encoded row as a square one-channel image: the row (with its condition, for the discriminator)
is zero-padded to ``side * side`` values, ``side`` the smallest of 4, 8, 16, 24, 32, 64 that holds it
(:func:`image_side`). Both networks are DCGAN-shaped stacks whose channel counts double as the side halves:

- :class:`ConvDiscriminator`: ``Conv(4, stride 2) -> LayerNorm -> LeakyReLU(0.2)`` per level (at most three), then a
  convolution over the last feature map to one score and a ReLU (CTAB-GAN+'s own last layer). ``forward`` returns
  ``(score, features)``: the features (the last level's activations) feed the generator's information loss.
- :class:`ConvGenerator`: ``[z, condition]`` as a 1 x 1 map, a transposed convolution to the smallest feature
  map, then ``LayerNorm -> ReLU -> ConvTranspose(4, stride 2)`` per level up to the ``side x side`` image, whose
  first ``data_dim`` values are the raw row (activate per span afterwards).

Layer normalisation is over each example's own feature map, so nothing mixes rows. Convolution weights start
from N(0, 0.02) (DCGAN's initialisation, as CTAB-GAN+).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["image_side", "ConvGenerator", "ConvDiscriminator", "SIDES"]

#: the image sides CTAB-GAN+ chooses from
SIDES = (4, 8, 16, 24, 32, 64)


def image_side(width: int) -> int:
    """The smallest side in :data:`SIDES` whose square holds ``width`` values."""
    for side in SIDES:
        if side * side >= width:
            return side
    raise ValueError(f"a row of {width} values does not fit a {SIDES[-1]} x {SIDES[-1]} image.")


def _levels(side: int, channels: int) -> list[tuple[int, int]]:
    """``(channels, side)`` of each feature map from the image down: the side halves, the channels double, while the
    side is above 3 and there are fewer than four maps."""
    levels = [(1, side), (channels, side // 2)]
    while levels[-1][1] > 3 and len(levels) < 4:
        levels.append((levels[-1][0] * 2, levels[-1][1] // 2))
    return levels


def _init(module: nn.Module) -> None:
    if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.normal_(module.weight, 0.0, 0.02)


def _as_image(x: torch.Tensor, side: int) -> torch.Tensor:
    return nn.functional.pad(x, (0, side * side - x.shape[1])).reshape(len(x), 1, side, side)


class ConvDiscriminator(nn.Module):
    """Scores rows of width ``input_dim`` (row and condition): ``(B, input_dim) -> ((B,), (B, features))``."""

    def __init__(self, input_dim: int, channels: int = 64):
        super().__init__()
        self.side = image_side(input_dim)
        levels = _levels(self.side, channels)
        body: list[nn.Module] = []
        for (c_in, _), (c_out, s_out) in zip(levels[:-1], levels[1:]):
            body += [nn.Conv2d(c_in, c_out, 4, 2, 1, bias=False), nn.LayerNorm([c_out, s_out, s_out]),
                     nn.LeakyReLU(0.2)]
        self.features = nn.Sequential(*body)
        last_channels, last_side = levels[-1]
        self.score = nn.Sequential(nn.Conv2d(last_channels, 1, last_side, 1, 0), nn.ReLU())
        self.apply(_init)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.features(_as_image(x, self.side))
        return self.score(h).reshape(len(x)), h.reshape(len(x), -1)


class ConvGenerator(nn.Module):
    """``(z (B, noise_dim), cond (B, cond_dim)) -> raw rows (B, data_dim)``."""

    def __init__(self, noise_dim: int, cond_dim: int, data_dim: int, channels: int = 64):
        super().__init__()
        self.data_dim = int(data_dim)
        side = image_side(self.data_dim)
        levels = _levels(side, channels)
        last_channels, last_side = levels[-1]
        layers: list[nn.Module] = [nn.ConvTranspose2d(noise_dim + cond_dim, last_channels, last_side, 1, 0,
                                                      bias=False)]
        for (c_in, s_in), (c_out, _) in zip(levels[:0:-1], levels[-2::-1]):
            layers += [nn.LayerNorm([c_in, s_in, s_in]), nn.ReLU(), nn.ConvTranspose2d(c_in, c_out, 4, 2, 1)]
        self.net = nn.Sequential(*layers)
        self.apply(_init)

    def forward(self, z: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        x = torch.cat([z, cond], dim=1)
        return self.net(x.reshape(len(x), -1, 1, 1)).reshape(len(x), -1)[:, :self.data_dim]
