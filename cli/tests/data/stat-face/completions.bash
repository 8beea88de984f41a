        counterhal__subcmd__stat)
            opts="-e -p -a -C -r -M -A -I -x -j -o -n -D -q -B -t -i -G -g -d -v -S -b -T -h --event --backend --model --cpu-model --events --descriptions --sysfs --pid --all-cpus --cpu --cpu-list --repeat --metrics --no-aggregate --no-aggr --per-thread --interval-print --interval-count --timeout --plot --field-separator --json-output --json --output --null --delay --control --quiet --big-num --no-big-num --append --log-fd --all-user --all-kernel --tid --no-inherit --cgroup --for-each-cgroup --filter --group --detailed --no-scale --scale --verbose --sync --pre --post --per-socket --per-die --per-core --per-node --per-cache --per-cluster --summary --no-csv-summary --interval-clear --table --metric-only --topdown --td-level --percore-show-thread --metric-no-group --metric-no-merge --no-merge --cputype --hybrid-merge --bpf-counters --bpf-attr-map --iostat --smi-cost --transaction --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --event)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -e)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backend)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cpu-model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --events)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --descriptions)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cpu-list)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cpu)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -C)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --repeat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -r)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -M)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval-print)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -I)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval-count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --plot)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --field-separator)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -x)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -D)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --control)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-fd)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -t)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cgroup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -G)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --for-each-cgroup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --filter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pre)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --post)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --per-cache)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --td-level)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cputype)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bpf-attr-map)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --iostat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;