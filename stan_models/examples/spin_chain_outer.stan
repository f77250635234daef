// Doubly-intractable posterior of a continuous spin chain (run with `stanlogz pmmh`):
//   pi(h, J | y) ∝ pi(h, J) p*(y | h, J) / Z(h, J),
// where y is one observed configuration of L real spins and p* is the inner program's density
// (spin_chain_inner.stan). This program's target is log pi(h, J) + log p*(y | h, J) without
// 1 / Z(h, J); the pseudo-marginal sampler supplies an unbiased estimate of 1 / Z(h, J).
// h is a field (like the Ising alpha) and J the nearest-neighbour coupling (like beta).
data {
  int<lower=2> L;
  vector[L] y;
}
parameters {
  real<lower=-1, upper=1> h;
  real<lower=-0.5, upper=0.5> J;
}
model {
  h ~ uniform(-1, 1);
  J ~ uniform(-0.5, 0.5);
  target += sum(-0.5 * square(y) - 0.25 * pow(y, 4) + h * y)
            + J * dot_product(y[1:(L - 1)], y[2:L]);
}
