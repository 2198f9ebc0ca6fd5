# Peer clusterings for benchmarks/real_data.py: mclust::Mclust and bayesm::rDPGibbs.
#
# Usage: Rscript benchmarks/peers.R DATA.csv OUTDIR R_ITERS KEEP SEED
#
# DATA.csv holds the (already standardised) data, one row per point, no header.
# Writes into OUTDIR:
#   status.txt          one line per peer: "<peer> ok", "<peer> missing" or "<peer> error: ..."
#   mclust.txt          model name, G, BIC, elapsed seconds (one "key value" per line)
#   mclust_labels.csv   the Mclust classification (MAP), one label per line
#   rdp.txt             R, keep, elapsed seconds, posterior means of alpha, a, nu, v
#   rdp_z.csv           the kept rDPGibbs indicator draws (R/keep rows, N columns)
#
# Mclust: default call, Mclust(y): every covariance model of mclust.options() and
# G = 1..9 components, the (model, G) pair chosen by BIC.
# rDPGibbs: Prior = list() (every documented default: Istarmin 1, Istarmax
# min(50, 0.1 N), power 0.8, alim c(0.01, 10), nulim c(0.01, 3), vlim c(0.1, 4)),
# Mcmc = list(R, keep, nprint = 0) with the defaults maxuniq 200, SCALE TRUE,
# gridsize 20. Burn-in and the point estimate are done by the caller from rdp_z.csv.

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 5) stop("usage: peers.R DATA.csv OUTDIR R_ITERS KEEP SEED")
y <- as.matrix(read.csv(args[[1]], header = FALSE))
outdir <- args[[2]]
r_iters <- as.integer(args[[3]])
keep <- as.integer(args[[4]])
seed <- as.integer(args[[5]])
status <- character(0)

if (requireNamespace("mclust", quietly = TRUE)) {
  suppressMessages(library(mclust))  # Mclust calls mclustBIC by name: attach it
  res <- tryCatch({
    set.seed(seed)
    t <- system.time(fit <- Mclust(y, verbose = FALSE))[["elapsed"]]
    writeLines(c(paste("model", fit$modelName), paste("G", fit$G), paste("bic", fit$bic),
                 paste("seconds", t)), file.path(outdir, "mclust.txt"))
    write.table(fit$classification, file.path(outdir, "mclust_labels.csv"),
                row.names = FALSE, col.names = FALSE)
    "mclust ok"
  }, error = function(e) paste("mclust error:", conditionMessage(e)))
  status <- c(status, res)
} else {
  status <- c(status, "mclust missing")
}

if (requireNamespace("bayesm", quietly = TRUE)) {
  res <- tryCatch({
    set.seed(seed)
    # bayesm's C++ code prints progress and armadillo warnings; keep them out of stdout.
    sink(tempfile())
    t <- system.time(out <- bayesm::rDPGibbs(
      Prior = list(), Data = list(y = y), Mcmc = list(R = r_iters, keep = keep, nprint = 0)
    ))[["elapsed"]]
    sink()
    # Posterior means of the hyperparameters over the second half of the kept draws; the
    # bayesm docs advise widening a support whose posterior piles up at one end.
    half <- seq(floor(length(out$adraw) / 2) + 1, length(out$adraw))
    writeLines(c(paste("R", r_iters), paste("keep", keep), paste("seconds", t),
                 paste("alpha", mean(out$alphadraw[half])), paste("a", mean(out$adraw[half])),
                 paste("nu", mean(out$nudraw[half])), paste("v", mean(out$vdraw[half]))),
               file.path(outdir, "rdp.txt"))
    write.table(out$nmix$zdraw, file.path(outdir, "rdp_z.csv"), sep = ",",
                row.names = FALSE, col.names = FALSE)
    "rdpgibbs ok"
  }, error = function(e) {
    if (sink.number() > 0) sink()
    paste("rdpgibbs error:", conditionMessage(e))
  })
  status <- c(status, res)
} else {
  status <- c(status, "rdpgibbs missing")
}

writeLines(status, file.path(outdir, "status.txt"))
