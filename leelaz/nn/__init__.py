"""The residual network as the engine sees it: input planes, symmetries, cache, evaluation."""
