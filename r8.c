#include "counterhal.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc,char**argv){ unsigned pid=atoi(argv[1]);
  counterhal_t*ch; counterhal_open(&ch,NULL); counterhal_set_t*s; counterhal_set_create_for(ch,COUNTERHAL_TARGET_PROCESS,pid,NULL,&s);
  counterhal_set_add(s,"syscalls:sys_enter_getpid"); counterhal_set_add(s,"task-clock"); printf("targets before start %d\n",counterhal_set_targets(s));
  counterhal_set_start(s); printf("targets %d\n",counterhal_set_targets(s)); usleep(200000);
  counterhal_reading_t rd[2]; int r=counterhal_set_stop(s,rd,2); printf("stop %d getpid=%llu task-clock=%llu e=%llu r=%llu\n",r,(unsigned long long)rd[0].value,(unsigned long long)rd[1].value,(unsigned long long)rd[0].time_enabled,(unsigned long long)rd[0].time_running);}
