# %% [markdown]
# # Papers
#
# > The 19 ICML 2025 papers by area: what each claims, whether it is implemented, and how its claims fared at CPU scale.
#
# - skip_exec: true
# - skip_showdoc: true

# %% [markdown]
# Each row links to the paper's page; the badges count its claims by verdict in the latest published `cpu` run (details, intervals and rules on the [results dashboard](dashboard.ipynb)). <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">partially</span> <span class="verdict v-not_reproduced" style="background:#c62828;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">not reproduced</span> <span class="verdict v-inconclusive" style="background:#6a1b9a;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">inconclusive</span> <span class="verdict v-illustrated" style="background:#1565c0;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">illustrated</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">not testable offline</span>
#
# Built by `trustlib report --publish` on 2026-12-01 13:06 UTC.

# %% [markdown]
# ## Fairness
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 2 | [The Disparate Benefits of Deep Ensembles](../papers/fairness/disparate_benefits.ipynb) | Deep Ensembles raise accuracy, but the gain can go unevenly to protected groups; per-group predictive diversity explains it, and Hardt post-processing of the ensemble fixes it. | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 partially</span> <span class="verdict v-not_reproduced" style="background:#c62828;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not reproduced</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not testable offline</span> |
# | 11 | [Fairness Overfitting in Machine Learning: An Information-Theoretic Perspective](../papers/fairness/fairness_generalization.ipynb) | Fairness measured on the training data need not hold on new data; the gap (fairness generalization error) depends on the algorithm and can be bounded with mutual information (MI) and conditional mutual information (CMI). | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">2 partially</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not testable offline</span> |
# | 15 | [Multiaccuracy and Multicalibration via Proxy Groups](../papers/fairness/proxy_multicalibration.ipynb) | Without the sensitive attribute, proxy groups give computable upper bounds on the true multiaccuracy and multicalibration violations, and post-processing a predictor on the proxies lowers the violations on the true groups. | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">2 reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">4 partially</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not testable offline</span> |

# %% [markdown]
# ## Privacy
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 3 | [Noisy SignSGD Is More Differentially Private Than You (Might) Think](../papers/privacy/noisy_signsgd.ipynb) | Releasing only the signs of noisy gradients is more private than the DP-SGD guarantee it inherits, and with the sign compressor Gaussian noise competes with logistic noise; we quantify both with an exact Rényi analysis and test them on federated digits. | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">2 reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 partially</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not testable offline</span> |
# | 10 | [Plausible Token Amplification for Improving Accuracy of Differentially Private In-Context Learning Based on Implicit Bayesian Inference](../papers/privacy/pta.ipynb) | DP few-shot generation for in-context learning: Tang et al.'s vocabulary-restricted Gaussian aggregation and PTA's amplification of plausible tokens, on an exact Bayesian GINC-like model. | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">6 reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">2 partially</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not testable offline</span> |

# %% [markdown]
# ## Calibration
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 6 | Understanding and Mitigating Miscalibration in Prompt Tuning for Vision-Language Models |  | planned | <span class="verdict v-planned" style="background:#cfd8dc;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">planned</span> |
# | 9 | [Calibrated Language Models and How to Find Them with Label Smoothing](../papers/calibration/label_smoothing.ipynb) | Label-smoothed cross-entropy for LLM fine-tuning, a memory-lean chunked linear + smoothed cross-entropy, an MCQ calibration evaluator, and a toy study of calibration after SFT. | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">2 reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 partially</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">2 not testable offline</span> |

# %% [markdown]
# ## Robustness
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 8 | The Ripple Effect: On Unforeseen Complications of Backdoor Attacks |  | planned | <span class="verdict v-planned" style="background:#cfd8dc;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">planned</span> |
# | 16 | [Breaking the Quadratic Barrier: Robust Cardinality Sketches for Adaptive Queries](../papers/robustness/robust_sketches.ipynb) | Cardinality sketches (bottom-k, k-mins, k-partition) with explicit ranks, the Ahmadian-Cohen attacks on them, and reconstructed robust estimators with per-key participation accounting. | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 partially</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not testable offline</span> |

# %% [markdown]
# ## Interpretability
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 13 | MIB: A Mechanistic Interpretability Benchmark |  | planned | <span class="verdict v-planned" style="background:#cfd8dc;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">planned</span> |
# | 14 | [Addressing Concept Mislabeling in Concept Bottleneck Models Through Preference Optimization](../papers/interp/cpo.ipynb) | Concept Preference Optimization (CPO): a DPO-style concept loss for concept bottleneck models, compared with binary cross-entropy when concept labels are noisy. | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 partially</span> <span class="verdict v-not_reproduced" style="background:#c62828;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">4 not reproduced</span> <span class="verdict v-illustrated" style="background:#1565c0;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">2 illustrated</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not testable offline</span> |
# | 17 | Are Sparse Autoencoders Useful? A Case Study in Sparse Probing |  | planned | <span class="verdict v-planned" style="background:#cfd8dc;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">planned</span> |
# | 18 | Sum-of-Parts: Self-Attributing Neural Networks with End-to-End Learning of Feature Groups |  | planned | <span class="verdict v-planned" style="background:#cfd8dc;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">planned</span> |
# | 19 | [SAEBench: A Comprehensive Benchmark for Sparse Autoencoders in Language Model Interpretability](../papers/interp/saebench.ipynb) | Proxy metrics (sparsity and reconstruction) do not predict how useful a sparse autoencoder is; Matryoshka SAEs reconstruct slightly worse yet disentangle features best, and ReLU SAEs absorb the most. | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 reproduced</span> <span class="verdict v-not_reproduced" style="background:#c62828;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">2 not reproduced</span> <span class="verdict v-inconclusive" style="background:#6a1b9a;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 inconclusive</span> <span class="verdict v-illustrated" style="background:#1565c0;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 illustrated</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 not testable offline</span> |

# %% [markdown]
# ## Unlearning
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 1 | [Efficient Source-free Unlearning via Energy-Guided Data Synthesis and Discrimination-Aware Multitask Optimization](../papers/unlearning/dsda.ipynb) | DSDA: class unlearning without any training data, by sampling synthetic inputs from the model's own energy (AEGDS) and unlearning on them with a discrimination-aware, conflict-averse multitask update (DAMO). | implemented | <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 partially</span> <span class="verdict v-not_reproduced" style="background:#c62828;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not reproduced</span> <span class="verdict v-inconclusive" style="background:#6a1b9a;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">4 inconclusive</span> <span class="verdict v-illustrated" style="background:#1565c0;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 illustrated</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not testable offline</span> |

# %% [markdown]
# ## Clustering
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 7 | [From Logits to Hierarchies: Hierarchical Clustering made Simple](../papers/clustering/l2h.ipynb) | L2H: a hierarchy over the clusters of any flat model, built from its logits alone, without features or training. | implemented | <span class="verdict v-reproduced" style="background:#2e7d32;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">4 reproduced</span> <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 partially</span> <span class="verdict v-not_reproduced" style="background:#c62828;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not reproduced</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not testable offline</span> |

# %% [markdown]
# ## Theory
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 5 | [The Power of Random Features and the Limits of Distribution-Free Gradient Descent](../papers/theory/random_features.ipynb) | Finite-precision mini-batch SGD, random-feature readouts, Boolean targets and SQ-dimension bounds: an honest computational companion to Karchmer and Malach (ICML 2025). | implemented | <span class="verdict v-partially" style="background:#f9a825;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">5 partially</span> <span class="verdict v-not_reproduced" style="background:#c62828;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">1 not reproduced</span> <span class="verdict v-not_testable_offline" style="background:#757575;color:#ffffff;padding:0 .45em;border-radius:.35em;white-space:nowrap">3 not testable offline</span> |

# %% [markdown]
# ## Bias
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 4 | Position: Rethinking LLM Bias Probing Using Lessons from the Social Sciences |  | planned | <span class="verdict v-planned" style="background:#cfd8dc;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">planned</span> |

# %% [markdown]
# ## Evaluations
#
# | # | Paper | Claim in one line | Status | Verdicts |
# |---|---|---|---|---|
# | 12 | SNS-Bench: Defining, Building, and Assessing Capabilities of Large Language Models in Social Networking Services |  | planned | <span class="verdict v-planned" style="background:#cfd8dc;color:#212121;padding:0 .45em;border-radius:.35em;white-space:nowrap">planned</span> |
