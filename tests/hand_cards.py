"""Hand-worked kernel cards for the rank-term tests: every figure a test checks follows from these numbers."""

from occmodel.card import KernelCard


class Toy(KernelCard):
    """200 CTAs of 10 main-loop iterations, 4,096 bytes an iteration each, no flops."""

    def grid(self, cfg, point):
        return 200

    def loop_iterations(self, cfg, point):
        return 10

    def bytes_moved(self, cfg, point):
        return 200 * 10 * 4096

    def flops(self, cfg, point):
        return 0


def toy() -> Toy:
    return Toy(name="toy", summary="", params=(), baseline={})
