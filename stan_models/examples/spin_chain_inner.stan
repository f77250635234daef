// Inner program of the continuous spin chain (see spin_chain_outer.stan): the unnormalized
// density p*(x | h, J) of L real spins, with the parameters theta = (h, J) as data.
//   log p*(x | h, J) = sum_i (-x_i^2 / 2 - x_i^4 / 4 + h x_i) + J sum_i x_i x_{i+1}
// Its normalizer Z(h, J) = integral of p* over R^L has no closed form; the quartic term makes it
// finite for every (h, J). stanlogz.targets_exact.spin_chain_log_z computes it by a transfer
// operator on a quadrature grid. The bounds below are the region the example is meant for.
data {
  int<lower=2> L;
  real<lower=-1, upper=1> h;
  real<lower=-0.5, upper=0.5> J;
}
parameters {
  vector[L] x;
}
model {
  target += sum(-0.5 * square(x) - 0.25 * pow(x, 4) + h * x)
            + J * dot_product(x[1:(L - 1)], x[2:L]);
}
