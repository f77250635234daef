// No prior on mu and no likelihood: the posterior is improper and NUTS fails at step-size
// initialization (a test of the error message).
parameters {
  real mu;
}
model {
}
