// A 2-state Gaussian hidden Markov model (posteriordb hmm_example-like): the forward algorithm
// marginalizes the states, so every y[t] enters the whole likelihood. The initial state has
// weight 1 per state (unnormalized, as in hmm_example): a constant factor in y.
data {
  int<lower=1> N;
  array[N] real y;
}
parameters {
  array[2] simplex[2] theta;
  positive_ordered[2] mu;
}
model {
  array[2] real acc;
  array[N, 2] real gamma;
  mu[1] ~ normal(3, 1);
  mu[2] ~ normal(10, 1);
  for (k in 1:2)
    gamma[1, k] = normal_lpdf(y[1] | mu[k], 1);
  for (t in 2:N) {
    for (k in 1:2) {
      for (j in 1:2)
        acc[j] = gamma[t - 1, j] + log(theta[j, k]) + normal_lpdf(y[t] | mu[k], 1);
      gamma[t, k] = log_sum_exp(acc);
    }
  }
  target += log_sum_exp(gamma[N]);
}
