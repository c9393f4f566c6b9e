"""Published figures the validation report names but has no case for, each with why."""

NOT_RECONSTRUCTED = (
    "EAGLE-3 paper (Li et al. 2025), LLaMA-3.1-8B MT-bench tau 6.13 (4.40x): tree drafting "
    "with a dynamic tree whose configuration could not be read from a primary source, and no "
    "chain of the same setup to calibrate on (quoted second-hand in sglang PR #4247).",
    "Kimi drafters at num_steps 3, AL 2.6-3.5 (AQ-MedAI/Kimi-K2-Instruct-eagle3 model card): "
    "accept lengths only, no tok/s measured on the seed hardware to score a prediction on.",
    "Community baselines (SGLang Kimi-K2.5 73-90 tok/s on 8 PCIe GPUs; 8x H200 ~108 tok/s): "
    "plain decoding only, nothing speculative to predict.",
)
