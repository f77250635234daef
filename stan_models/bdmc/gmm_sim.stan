// Simulation program for gmm.stan: sorted iid normal means, Dirichlet weights, then data.
data {
  int<lower=1> N;
  int<lower=1> K;
  real<lower=0> sigma;
  real<lower=0> tau;
}
generated quantities {
  vector[K] mu = sort_asc(to_vector(normal_rng(rep_vector(0, K), tau)));
  vector[K] w = dirichlet_rng(rep_vector(2, K));
  vector[N] y;
  for (n in 1:N) {
    y[n] = normal_rng(mu[categorical_rng(w)], sigma);
  }
}
