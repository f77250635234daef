// A deliberately slow program for tests that stop NUTS early: every log density evaluation
// loops K times, so with the K in slow.json one NUTS iteration takes milliseconds and any run
// those tests start would take hours. "Stopped promptly" then cannot be confused with "finished",
// however loaded the machine is.
data {
  int<lower=1> K;
}
parameters {
  real mu;
}
model {
  real s = 0;
  for (k in 1:K) {
    s += mu;
  }
  target += normal_lpdf(s / K | 0, 1);
}
