# The arms of a search comparison, sourced by compare_search.sh and run_arm.sh:
#   model    the mutator, its proposals ranked by the cost model (the default search)
#   mutator  the mutator, each proposal sent (--cost-model none)
#   random   random search, each proposal sent: the baseline of every claim
#   library  model, its mutator also transferring stages from the other problems'
#            tuned schedules in $KS_LIBRARY (evolve/search/README.md; never the problem's own)
#   as_written  model, with no graph rewrite (--no-rewrites): the graph scheduled as written
arm_flags() {
  case $1 in
    model) echo "--proposer mutator --cost-model xgboost" ;;
    mutator) echo "--proposer mutator --cost-model none" ;;
    random) echo "--proposer random --cost-model none" ;;
    as_written) echo "--proposer mutator --cost-model xgboost --no-rewrites" ;;
    library) echo "--proposer mutator --cost-model xgboost --library ${KS_LIBRARY:?library: set KS_LIBRARY}" ;;
    *) echo "unknown arm '$1' (model, mutator, random, as_written or library)" >&2; return 2 ;;
  esac
}
