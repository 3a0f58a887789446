_authtime() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="authtime"
                ;;
            authtime,broadcast)
                cmd="authtime__subcmd__broadcast"
                ;;
            authtime,config)
                cmd="authtime__subcmd__config"
                ;;
            authtime,hash)
                cmd="authtime__subcmd__hash"
                ;;
            authtime,help)
                cmd="authtime__subcmd__help"
                ;;
            authtime,keygen)
                cmd="authtime__subcmd__keygen"
                ;;
            authtime,mac)
                cmd="authtime__subcmd__mac"
                ;;
            authtime,nts)
                cmd="authtime__subcmd__nts"
                ;;
            authtime,query)
                cmd="authtime__subcmd__query"
                ;;
            authtime,roughtime)
                cmd="authtime__subcmd__roughtime"
                ;;
            authtime,serve)
                cmd="authtime__subcmd__serve"
                ;;
            authtime,status)
                cmd="authtime__subcmd__status"
                ;;
            authtime,tesla)
                cmd="authtime__subcmd__tesla"
                ;;
            authtime__subcmd__broadcast,help)
                cmd="authtime__subcmd__broadcast__subcmd__help"
                ;;
            authtime__subcmd__broadcast,listen)
                cmd="authtime__subcmd__broadcast__subcmd__listen"
                ;;
            authtime__subcmd__broadcast,serve)
                cmd="authtime__subcmd__broadcast__subcmd__serve"
                ;;
            authtime__subcmd__broadcast__subcmd__help,help)
                cmd="authtime__subcmd__broadcast__subcmd__help__subcmd__help"
                ;;
            authtime__subcmd__broadcast__subcmd__help,listen)
                cmd="authtime__subcmd__broadcast__subcmd__help__subcmd__listen"
                ;;
            authtime__subcmd__broadcast__subcmd__help,serve)
                cmd="authtime__subcmd__broadcast__subcmd__help__subcmd__serve"
                ;;
            authtime__subcmd__config,check)
                cmd="authtime__subcmd__config__subcmd__check"
                ;;
            authtime__subcmd__config,help)
                cmd="authtime__subcmd__config__subcmd__help"
                ;;
            authtime__subcmd__config__subcmd__help,check)
                cmd="authtime__subcmd__config__subcmd__help__subcmd__check"
                ;;
            authtime__subcmd__config__subcmd__help,help)
                cmd="authtime__subcmd__config__subcmd__help__subcmd__help"
                ;;
            authtime__subcmd__help,broadcast)
                cmd="authtime__subcmd__help__subcmd__broadcast"
                ;;
            authtime__subcmd__help,config)
                cmd="authtime__subcmd__help__subcmd__config"
                ;;
            authtime__subcmd__help,hash)
                cmd="authtime__subcmd__help__subcmd__hash"
                ;;
            authtime__subcmd__help,help)
                cmd="authtime__subcmd__help__subcmd__help"
                ;;
            authtime__subcmd__help,keygen)
                cmd="authtime__subcmd__help__subcmd__keygen"
                ;;
            authtime__subcmd__help,mac)
                cmd="authtime__subcmd__help__subcmd__mac"
                ;;
            authtime__subcmd__help,nts)
                cmd="authtime__subcmd__help__subcmd__nts"
                ;;
            authtime__subcmd__help,query)
                cmd="authtime__subcmd__help__subcmd__query"
                ;;
            authtime__subcmd__help,roughtime)
                cmd="authtime__subcmd__help__subcmd__roughtime"
                ;;
            authtime__subcmd__help,serve)
                cmd="authtime__subcmd__help__subcmd__serve"
                ;;
            authtime__subcmd__help,status)
                cmd="authtime__subcmd__help__subcmd__status"
                ;;
            authtime__subcmd__help,tesla)
                cmd="authtime__subcmd__help__subcmd__tesla"
                ;;
            authtime__subcmd__help__subcmd__broadcast,listen)
                cmd="authtime__subcmd__help__subcmd__broadcast__subcmd__listen"
                ;;
            authtime__subcmd__help__subcmd__broadcast,serve)
                cmd="authtime__subcmd__help__subcmd__broadcast__subcmd__serve"
                ;;
            authtime__subcmd__help__subcmd__config,check)
                cmd="authtime__subcmd__help__subcmd__config__subcmd__check"
                ;;
            authtime__subcmd__help__subcmd__mac,list)
                cmd="authtime__subcmd__help__subcmd__mac__subcmd__list"
                ;;
            authtime__subcmd__help__subcmd__mac,tag)
                cmd="authtime__subcmd__help__subcmd__mac__subcmd__tag"
                ;;
            authtime__subcmd__help__subcmd__mac,verify)
                cmd="authtime__subcmd__help__subcmd__mac__subcmd__verify"
                ;;
            authtime__subcmd__help__subcmd__nts,cert)
                cmd="authtime__subcmd__help__subcmd__nts__subcmd__cert"
                ;;
            authtime__subcmd__help__subcmd__nts,kek)
                cmd="authtime__subcmd__help__subcmd__nts__subcmd__kek"
                ;;
            authtime__subcmd__help__subcmd__roughtime,delegate)
                cmd="authtime__subcmd__help__subcmd__roughtime__subcmd__delegate"
                ;;
            authtime__subcmd__help__subcmd__roughtime,keygen)
                cmd="authtime__subcmd__help__subcmd__roughtime__subcmd__keygen"
                ;;
            authtime__subcmd__help__subcmd__roughtime,query)
                cmd="authtime__subcmd__help__subcmd__roughtime__subcmd__query"
                ;;
            authtime__subcmd__help__subcmd__roughtime,verify-report)
                cmd="authtime__subcmd__help__subcmd__roughtime__subcmd__verify__subcmd__report"
                ;;
            authtime__subcmd__help__subcmd__tesla,dtls-recv)
                cmd="authtime__subcmd__help__subcmd__tesla__subcmd__dtls__subcmd__recv"
                ;;
            authtime__subcmd__help__subcmd__tesla,dtls-send)
                cmd="authtime__subcmd__help__subcmd__tesla__subcmd__dtls__subcmd__send"
                ;;
            authtime__subcmd__help__subcmd__tesla,keygen)
                cmd="authtime__subcmd__help__subcmd__tesla__subcmd__keygen"
                ;;
            authtime__subcmd__help__subcmd__tesla,recv)
                cmd="authtime__subcmd__help__subcmd__tesla__subcmd__recv"
                ;;
            authtime__subcmd__help__subcmd__tesla,send)
                cmd="authtime__subcmd__help__subcmd__tesla__subcmd__send"
                ;;
            authtime__subcmd__mac,help)
                cmd="authtime__subcmd__mac__subcmd__help"
                ;;
            authtime__subcmd__mac,list)
                cmd="authtime__subcmd__mac__subcmd__list"
                ;;
            authtime__subcmd__mac,tag)
                cmd="authtime__subcmd__mac__subcmd__tag"
                ;;
            authtime__subcmd__mac,verify)
                cmd="authtime__subcmd__mac__subcmd__verify"
                ;;
            authtime__subcmd__mac__subcmd__help,help)
                cmd="authtime__subcmd__mac__subcmd__help__subcmd__help"
                ;;
            authtime__subcmd__mac__subcmd__help,list)
                cmd="authtime__subcmd__mac__subcmd__help__subcmd__list"
                ;;
            authtime__subcmd__mac__subcmd__help,tag)
                cmd="authtime__subcmd__mac__subcmd__help__subcmd__tag"
                ;;
            authtime__subcmd__mac__subcmd__help,verify)
                cmd="authtime__subcmd__mac__subcmd__help__subcmd__verify"
                ;;
            authtime__subcmd__nts,cert)
                cmd="authtime__subcmd__nts__subcmd__cert"
                ;;
            authtime__subcmd__nts,help)
                cmd="authtime__subcmd__nts__subcmd__help"
                ;;
            authtime__subcmd__nts,kek)
                cmd="authtime__subcmd__nts__subcmd__kek"
                ;;
            authtime__subcmd__nts__subcmd__help,cert)
                cmd="authtime__subcmd__nts__subcmd__help__subcmd__cert"
                ;;
            authtime__subcmd__nts__subcmd__help,help)
                cmd="authtime__subcmd__nts__subcmd__help__subcmd__help"
                ;;
            authtime__subcmd__nts__subcmd__help,kek)
                cmd="authtime__subcmd__nts__subcmd__help__subcmd__kek"
                ;;
            authtime__subcmd__roughtime,delegate)
                cmd="authtime__subcmd__roughtime__subcmd__delegate"
                ;;
            authtime__subcmd__roughtime,help)
                cmd="authtime__subcmd__roughtime__subcmd__help"
                ;;
            authtime__subcmd__roughtime,keygen)
                cmd="authtime__subcmd__roughtime__subcmd__keygen"
                ;;
            authtime__subcmd__roughtime,query)
                cmd="authtime__subcmd__roughtime__subcmd__query"
                ;;
            authtime__subcmd__roughtime,verify-report)
                cmd="authtime__subcmd__roughtime__subcmd__verify__subcmd__report"
                ;;
            authtime__subcmd__roughtime__subcmd__help,delegate)
                cmd="authtime__subcmd__roughtime__subcmd__help__subcmd__delegate"
                ;;
            authtime__subcmd__roughtime__subcmd__help,help)
                cmd="authtime__subcmd__roughtime__subcmd__help__subcmd__help"
                ;;
            authtime__subcmd__roughtime__subcmd__help,keygen)
                cmd="authtime__subcmd__roughtime__subcmd__help__subcmd__keygen"
                ;;
            authtime__subcmd__roughtime__subcmd__help,query)
                cmd="authtime__subcmd__roughtime__subcmd__help__subcmd__query"
                ;;
            authtime__subcmd__roughtime__subcmd__help,verify-report)
                cmd="authtime__subcmd__roughtime__subcmd__help__subcmd__verify__subcmd__report"
                ;;
            authtime__subcmd__tesla,dtls-recv)
                cmd="authtime__subcmd__tesla__subcmd__dtls__subcmd__recv"
                ;;
            authtime__subcmd__tesla,dtls-send)
                cmd="authtime__subcmd__tesla__subcmd__dtls__subcmd__send"
                ;;
            authtime__subcmd__tesla,help)
                cmd="authtime__subcmd__tesla__subcmd__help"
                ;;
            authtime__subcmd__tesla,keygen)
                cmd="authtime__subcmd__tesla__subcmd__keygen"
                ;;
            authtime__subcmd__tesla,recv)
                cmd="authtime__subcmd__tesla__subcmd__recv"
                ;;
            authtime__subcmd__tesla,send)
                cmd="authtime__subcmd__tesla__subcmd__send"
                ;;
            authtime__subcmd__tesla__subcmd__help,dtls-recv)
                cmd="authtime__subcmd__tesla__subcmd__help__subcmd__dtls__subcmd__recv"
                ;;
            authtime__subcmd__tesla__subcmd__help,dtls-send)
                cmd="authtime__subcmd__tesla__subcmd__help__subcmd__dtls__subcmd__send"
                ;;
            authtime__subcmd__tesla__subcmd__help,help)
                cmd="authtime__subcmd__tesla__subcmd__help__subcmd__help"
                ;;
            authtime__subcmd__tesla__subcmd__help,keygen)
                cmd="authtime__subcmd__tesla__subcmd__help__subcmd__keygen"
                ;;
            authtime__subcmd__tesla__subcmd__help,recv)
                cmd="authtime__subcmd__tesla__subcmd__help__subcmd__recv"
                ;;
            authtime__subcmd__tesla__subcmd__help,send)
                cmd="authtime__subcmd__tesla__subcmd__help__subcmd__send"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        authtime)
            opts="-h -V --help --version mac hash serve config query keygen nts tesla broadcast status roughtime help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__broadcast)
            opts="-h -V --help --version serve listen help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__broadcast__subcmd__help)
            opts="serve listen help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__broadcast__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__broadcast__subcmd__help__subcmd__listen)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__broadcast__subcmd__help__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__broadcast__subcmd__listen)
            opts="-h -V --group --iface --sync --pubkey --count --max-step-ms --drift-ppm --json --timeout --nts-check --nts-ca --nts-tolerance-ms --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --group)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --iface)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sync)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pubkey)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-step-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --drift-ppm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nts-check)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nts-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nts-tolerance-ms)
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
        authtime__subcmd__broadcast__subcmd__serve)
            opts="-h -V --group --iface --ttl --sync-listen --key --interval-ms --delay-intervals --chain-length --duration --config --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --group)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --iface)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ttl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sync-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay-intervals)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chain-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
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
        authtime__subcmd__config)
            opts="-h -V --help --version check help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__config__subcmd__check)
            opts="-h -V --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__config__subcmd__help)
            opts="check help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__config__subcmd__help__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__config__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__hash)
            opts="-h -V --alg --in --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --alg)
                    COMPREPLY=($(compgen -W "md5 md5-kway4 md5-kway16" -- "${cur}"))
                    return 0
                    ;;
                --in)
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
        authtime__subcmd__help)
            opts="mac hash serve config query keygen nts tesla broadcast status roughtime help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__broadcast)
            opts="serve listen"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__broadcast__subcmd__listen)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__broadcast__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__config)
            opts="check"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__config__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__hash)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__keygen)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__mac)
            opts="list tag verify"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__mac__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__mac__subcmd__tag)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__mac__subcmd__verify)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__nts)
            opts="cert kek"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__nts__subcmd__cert)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__nts__subcmd__kek)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__query)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__roughtime)
            opts="query verify-report keygen delegate"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__roughtime__subcmd__delegate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__roughtime__subcmd__keygen)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__roughtime__subcmd__query)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__roughtime__subcmd__verify__subcmd__report)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__tesla)
            opts="keygen send recv dtls-send dtls-recv"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__tesla__subcmd__dtls__subcmd__recv)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__tesla__subcmd__dtls__subcmd__send)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__tesla__subcmd__keygen)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__tesla__subcmd__recv)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__help__subcmd__tesla__subcmd__send)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__keygen)
            opts="-h -V --format --type --count --first-id --out --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --format)
                    COMPREPLY=($(compgen -W "chrony ntpd" -- "${cur}"))
                    return 0
                    ;;
                --type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --first-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
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
        authtime__subcmd__mac)
            opts="-h -V --help --version list tag verify help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__mac__subcmd__help)
            opts="list tag verify help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__mac__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__mac__subcmd__help__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__mac__subcmd__help__subcmd__tag)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__mac__subcmd__help__subcmd__verify)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__mac__subcmd__list)
            opts="-h -V --json --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__mac__subcmd__tag)
            opts="-h -V --alg --key --nonce --in --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --alg)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nonce)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --in)
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
        authtime__subcmd__mac__subcmd__verify)
            opts="-h -V --alg --key --nonce --in --tag --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --alg)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nonce)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --in)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tag)
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
        authtime__subcmd__nts)
            opts="-h -V --help --version cert kek help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__nts__subcmd__cert)
            opts="-h -V --out-dir --prefix --name --ip --days --self-signed --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --days)
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
        authtime__subcmd__nts__subcmd__help)
            opts="cert kek help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__nts__subcmd__help__subcmd__cert)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__nts__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__nts__subcmd__help__subcmd__kek)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__nts__subcmd__kek)
            opts="-h -V --out --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out)
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
        authtime__subcmd__query)
            opts="-h -V --key-file --key-id --count --timeout --interval --json --interleaved --nts --ca --cookie-store --roughtime-servers --roughtime-quorum --clock-unknown --assume-local-time --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cookie-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --roughtime-servers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --roughtime-quorum)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --assume-local-time)
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
        authtime__subcmd__roughtime)
            opts="-h -V --help --version query verify-report keygen delegate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__roughtime__subcmd__delegate)
            opts="-h -V --long-term-key --valid-for --out --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --long-term-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --valid-for)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
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
        authtime__subcmd__roughtime__subcmd__help)
            opts="query verify-report keygen delegate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__roughtime__subcmd__help__subcmd__delegate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__roughtime__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__roughtime__subcmd__help__subcmd__keygen)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__roughtime__subcmd__help__subcmd__query)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__roughtime__subcmd__help__subcmd__verify__subcmd__report)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__roughtime__subcmd__keygen)
            opts="-h -V --out --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out)
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
        authtime__subcmd__roughtime__subcmd__query)
            opts="-h --servers --server --public-key --version --timeout-ms --retries --json --malfeasance-report --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --servers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --public-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --version)
                    COMPREPLY=($(compgen -W "1 draft" -- "${cur}"))
                    return 0
                    ;;
                --timeout-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retries)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --malfeasance-report)
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
        authtime__subcmd__roughtime__subcmd__verify__subcmd__report)
            opts="-h -V --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__serve)
            opts="-h -V --config --listen --keys --metrics --workers --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keys)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --workers)
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
        authtime__subcmd__status)
            opts="-h -V --config --server --json --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --server)
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
        authtime__subcmd__tesla)
            opts="-h -V --help --version keygen send recv dtls-send dtls-recv help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__tesla__subcmd__dtls__subcmd__recv)
            opts="-h -V --server --pubkey --psk-identity --psk-hex --cert --out --json --timeout --drift-ppm --attempt-ms --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pubkey)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --psk-identity)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --psk-hex)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --drift-ppm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attempt-ms)
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
        authtime__subcmd__tesla__subcmd__dtls__subcmd__send)
            opts="-h -V --listen --key --psk-identity --psk-hex --cert-out --clients --wait-timeout --in --interval-ms --delay-intervals --chain-length --mac --mac-len --rate --payload-size --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --psk-identity)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --psk-hex)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cert-out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --clients)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --wait-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --in)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay-intervals)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chain-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mac)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mac-len)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --payload-size)
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
        authtime__subcmd__tesla__subcmd__help)
            opts="keygen send recv dtls-send dtls-recv help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__tesla__subcmd__help__subcmd__dtls__subcmd__recv)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__tesla__subcmd__help__subcmd__dtls__subcmd__send)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__tesla__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__tesla__subcmd__help__subcmd__keygen)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__tesla__subcmd__help__subcmd__recv)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__tesla__subcmd__help__subcmd__send)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        authtime__subcmd__tesla__subcmd__keygen)
            opts="-h -V --scheme --out --pub --json --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --scheme)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pub)
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
        authtime__subcmd__tesla__subcmd__recv)
            opts="-h -V --group --iface --sender --pubkey --out --json --stats --max-buffer --timeout --idle-exit --drift-ppm --status-every --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --group)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --iface)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sender)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pubkey)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stats)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-buffer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --idle-exit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --drift-ppm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --status-every)
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
        authtime__subcmd__tesla__subcmd__send)
            opts="-h -V --to --iface --ttl --key --sync-listen --interval-ms --delay-intervals --chain-length --mac --mac-len --in --rate --payload-size --wait-sync --wait-timeout --max-syncs-per-s --drop-every --reorder --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --iface)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ttl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sync-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay-intervals)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chain-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mac)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mac-len)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --in)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --payload-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --wait-sync)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --wait-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-syncs-per-s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --drop-every)
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
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _authtime -o nosort -o bashdefault -o default authtime
else
    complete -F _authtime -o bashdefault -o default authtime
fi
